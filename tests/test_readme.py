"""Every Python example in README.md runs as written."""
import os
import re

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the examples write files
    with open(README) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), flags=re.S)
    assert len(blocks) >= 4
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, README, "exec"), namespace)  # noqa: S102  (our own documentation)
        if "first_loss" in namespace and "tour_loss" not in namespace:
            namespace["tour_loss"] = (float(namespace["first_loss"]), float(namespace["loss"]))
    first, last = namespace["tour_loss"]
    assert last < 0.5 * first
    assert float(namespace["fg"].grad(namespace["relu_or_square"])(-3.0)) == -6.0
    assert namespace["accuracy"] > 0.95
    assert namespace["metadata"] == {"epoch": 10}
