"""Every Python example in README.md runs as written."""
import os
import re

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


def test_readme_python_blocks_run():
    with open(README) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), flags=re.S)
    assert len(blocks) >= 3
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, README, "exec"), namespace)  # noqa: S102  (our own documentation)
    assert float(namespace["loss"]) < 0.5 * float(namespace["first_loss"])
    assert float(namespace["fg"].grad(namespace["relu_or_square"])(-3.0)) == -6.0
