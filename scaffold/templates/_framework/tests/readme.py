"""README.md's example, as an author pastes it: each code block whose first line names a file of
the package (`# src/<package>/agent.py`) is that file, as it is written there. tests/test_readme.py
runs the example (ReadmeCase.run_example() puts the files in a copy of the package).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sessions import PACKAGE, ROOT, Run, SessionCase

_FILE = re.compile(r"^```python\n(# src/" + PACKAGE + r"/(\S+\.py)\n.*?)^```", re.S | re.M)


def readme_files() -> dict[str, str]:
    """The files README.md's example is made of: their paths in the package, and their text."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return {path: code for code, path in _FILE.findall(text)}


class ReadmeCase(SessionCase):
    """A session of the package with README.md's files in it, answered by self.model."""

    FILES = ("agent.py", "tickets_server.py")

    def setUp(self) -> None:
        super().setUp()
        self.files = readme_files()
        self.assertEqual(tuple(sorted(self.files)), self.FILES)
        self.api.script = self.model

    def model(
        self, body: dict[str, Any], answers: list[str], offered: list[str]
    ) -> tuple[str, list[tuple[str, Any]]]:
        raise NotImplementedError("a README test says how its model answers")

    def example_request(self) -> dict[str, Any] | None:
        """The session request the example runs with; None: the tests' usual one."""
        return None

    def run_example(
        self, answer: Any, files: Mapping[str, str | None]
    ) -> tuple[list[dict[str, Any]], Run]:
        """Runs the package with files (None: the file removed); the harness exits 0 with a
        result, 1 with an error."""
        events, code, run = self.session(
            answer, request=self.example_request(), argv=self.package_with(files)
        )
        self.assertEqual(code, 0 if events[-1]["type"] == "result" else 1, run.log())
        return events, run
