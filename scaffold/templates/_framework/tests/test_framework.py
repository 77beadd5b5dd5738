"""The agent on the real framework, run as a node runs it against oz0's fake model: it calls the
agent's tool, asked first, and says what the tool answered; a refusal is the tool's answer.

Needs what `uv sync` installs (the framework) and `oz0` on the PATH; skipped, saying which is
missing, without them. The plugin's CI workflow runs it.
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sessions import MODEL_NAME, PACKAGE, SRC, TIMEOUT, SessionCase
from test_agent import FORMATS


def missing() -> str:
    """What this test needs and does not have; "" when nothing."""
    sys.path.insert(0, str(SRC))
    try:
        importlib.import_module(f"{PACKAGE}.wiring")
    except ImportError as err:
        return f"the framework is not installed ({err.name}): run uv sync"
    finally:
        sys.path.remove(str(SRC))
    if shutil.which("oz0") is None:
        return "oz0 is not on the PATH"
    return ""


@unittest.skipIf(missing(), missing())
class FrameworkTest(SessionCase):
    def setUp(self) -> None:
        super().setUp()
        ready = Path(tempfile.mkdtemp(prefix="oz0-fake-model-")) / "url"
        self.addCleanup(shutil.rmtree, ready.parent, True)
        self.fake = subprocess.Popen(
            ["oz0", "fake-model", "serve", "--ready-file", str(ready)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.addCleanup(self.stop_fake)
        deadline = time.monotonic() + TIMEOUT
        while not (ready.exists() and ready.read_text().strip()):
            if time.monotonic() > deadline or self.fake.poll() is not None:
                self.fail("oz0 fake-model serve did not start")
            time.sleep(0.02)
        self.url = ready.read_text().strip()

    def stop_fake(self) -> None:
        self.fake.terminate()
        self.fake.wait(TIMEOUT)

    def env(self) -> dict[str, str]:
        env = super().env()
        if hasattr(self, "url"):
            env["ANTHROPIC_BASE_URL"] = self.url
            env["OPENAI_BASE_URL"] = self.url + "/v1"
        return env

    def run_in(self, format: str, answer: Any) -> list[dict[str, Any]]:
        request = self.request(model={"name": MODEL_NAME, "format": format, "record": "fake"})
        events, code, run = self.session(answer, request=request)
        self.assertEqual(code, 0, run.log())
        return events

    def test_a_tool_call_is_asked_and_answered(self) -> None:
        for format in FORMATS:
            with self.subTest(format=format):
                events = self.run_in(format, self.allow)
                told = [e for e in events if e["type"] == "tool_result"]
                self.assertEqual(len(told), 1)
                self.assertEqual(told[0]["tool"], "notify_team")
                self.assertIn("The tool answered: told the", str(events[-1]["output"]))

    def test_a_refusal_reaches_the_model(self) -> None:
        for format in FORMATS:
            with self.subTest(format=format):
                events = self.run_in(format, self.deny("billing is told by a person"))
                self.assertFalse([e for e in events if e["type"] == "tool_result"])
                self.assertIn("refused: billing is told by a person", str(events[-1]["output"]))


if __name__ == "__main__":
    unittest.main()
