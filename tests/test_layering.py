"""The code's shape: modules import in one direction (no cycle, checked from the source), none is
longer than ~600 lines, and the source excerpts README.md shows (```py blocks) are in the code."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "funcgrad"


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


def import_graph() -> dict[str, set[str]]:
    """module -> the funcgrad modules it imports, at the top or inside functions."""
    modules = _modules()
    graph = {}
    for name, (path, is_package) in modules.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names]
            else:
                continue
            edges.update(t for t in targets if t in modules and t != name)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle():
    graph = import_graph()
    assert "funcgrad.ops.core" in graph["funcgrad.ops.elementwise"]
    assert cycles(graph) == []


def test_the_cycle_check_finds_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_import_funcgrad_leaves_distributions_until_first_use():
    """Every launched worker and command-line call pays `import funcgrad`: distributions (0.18 s of
    CPU of 1.08) loads when fg.distributions is first read, and is then the module itself."""
    probe = ("import sys, funcgrad as fg; assert 'funcgrad.distributions' not in sys.modules; "
             "normal = fg.distributions.Normal(0.0, 1.0); import funcgrad.distributions as d; "
             "assert d is fg.distributions; assert 'distributions' in dir(fg); print(float(normal.log_prob(0.0)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    assert abs(float(out.stdout) + 0.9189385) < 1e-6, out.stderr


def test_no_module_is_too_long():
    long = {str(p.relative_to(ROOT)): n for p, _ in _modules().values() if (n := len(p.read_text().splitlines())) > 620}
    assert long == {}


def test_readme_source_excerpts_are_in_the_code():
    excerpts = re.findall(r"```py\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    assert excerpts
    source = "\n".join(p.read_text() for p, _ in _modules().values())
    for excerpt in excerpts:
        assert excerpt.strip() in source, excerpt
