"""The Array API standard's conformance suite (data-apis/array-api-tests) against funcgrad.numpy:
passed / failed per test file and the share of run tests that pass. Not part of CI (about 15
minutes on 2 cores).

    git clone --recurse-submodules --branch 2026.02.26 https://github.com/data-apis/array-api-tests
    pip install ndindex pytest-json-report          # the suite's own requirements
    python benchmarks/array_api.py path/to/array-api-tests [--max-examples 20] [-k expr]
        [--skip-dtypes complex64,complex128] [--module numpy]    # a peer, for comparison

ARRAY_API_TESTS_MODULE=funcgrad.numpy, hypothesis seed 0, with no wrapper: the module as users
get it.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile


def run(suite: str, max_examples: int, select: str | None, module: str, skip_dtypes: str) -> dict:
    """{test file: Counter of outcomes} from one pytest run of the suite."""
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        cmd = [sys.executable, "-m", "pytest", "array_api_tests", "-q", "-p", "no:cacheprovider", "--json-report",
               f"--json-report-file={report}", f"--max-examples={max_examples}", "--hypothesis-seed=0",
               "--disable-warnings", "-o", "addopts="]
        if select:
            cmd += ["-k", select]
        env = {**os.environ, "ARRAY_API_TESTS_MODULE": module, "ARRAY_API_TESTS_SKIP_DTYPES": skip_dtypes,
               "NUMBA_ENABLE_CUDASIM": "1"}
        subprocess.run(cmd, cwd=suite, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(report) as f:
            tests = json.load(f)["tests"]
    table: dict = collections.defaultdict(collections.Counter)
    for test in tests:
        table[test["nodeid"].split("::")[0].rsplit("/", 1)[-1]][test["outcome"]] += 1
    return table


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", help="a checkout of data-apis/array-api-tests with its array-api submodule")
    parser.add_argument("--max-examples", type=int, default=20)
    parser.add_argument("-k", dest="select", help="pytest -k expression (a subset)")
    parser.add_argument("--module", default="funcgrad.numpy")
    parser.add_argument("--skip-dtypes", default="", help="e.g. complex64,complex128 (the suite's own switch)")
    args = parser.parse_args(argv)
    table = run(args.suite, args.max_examples, args.select, args.module, args.skip_dtypes)
    total: collections.Counter = collections.Counter()
    print(f"{'file':<32}{'passed':>8}{'failed':>8}{'skipped':>9}{'pass %':>8}")
    for name in sorted(table):
        c = table[name]
        total += c
        ran = c["passed"] + c["failed"] + c["error"]
        print(f"{name:<32}{c['passed']:>8}{c['failed'] + c['error']:>8}{c['skipped']:>9}"
              f"{100 * c['passed'] / ran if ran else 0:>8.1f}")
    ran = total["passed"] + total["failed"] + total["error"]
    print(f"{'all':<32}{total['passed']:>8}{total['failed'] + total['error']:>8}{total['skipped']:>9}"
          f"{100 * total['passed'] / ran if ran else 0:>8.1f}")


if __name__ == "__main__":
    main()
