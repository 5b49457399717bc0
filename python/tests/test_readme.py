"""python/README.md, the package's page on PyPI: its example runs as written."""

import os
import re

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")


def test_the_readme_example_passes(vastfake):
    with open(README, encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) == 1, "python/README.md has one Python example"
    namespace = {}
    exec(compile(blocks[0], README, "exec"), namespace)
    namespace["test_produce"](vastfake)
    assert [t.name for t in vastfake.topics()] == ["orders"]
