"""README.md's example, as an author pastes it: each code block whose first line names a file of
the package (`# src/<package>/agent.py`) is that file, as it is written there. tests/test_readme.py
runs the example (SessionCase.package_with() puts the files in a copy of the package).
"""

from __future__ import annotations

import re

from sessions import PACKAGE, ROOT

_FILE = re.compile(r"^```python\n(# src/" + PACKAGE + r"/(\S+\.py)\n.*?)^```", re.S | re.M)


def readme_files() -> dict[str, str]:
    """The files README.md's example is made of: their paths in the package, and their text."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return {path: code for code, path in _FILE.findall(text)}
