"""The agent against oz0's own fake model (`oz0 fake-model serve`), as `oz0 plugin test` and
`oz0 dev` run it: it calls the agent's tool (TOOL, in test_agent.py, which says what to change
for an agent.py without it), asked first, and says what the tool answered; a refusal is the
tool's answer.

Needs `oz0` on the PATH: skipped, saying so, without it. The plugin's CI workflow installs it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sessions import MODEL_NAME, TIMEOUT, SessionCase
from test_agent import ASKED, FORMATS, TOOL, tool_answer

# oz0's fake model as the built-in script answers, but for the tool it calls: TOOL, by its name,
# rather than the first the request offers (an agent's tools come in the order its author wrote).
SCRIPT = json.dumps(  # YAML, as JSON is
    {
        "rules": [
            {
                "match": {"tool_result": True},
                "reply": {"text": "The tool answered: ${tool_result}"},
            },
            {
                "match": {"tools": f"^{TOOL}$"},
                "reply": {"tool_call": {"name": TOOL, "arguments": ASKED}},
            },
        ]
    }
)


@unittest.skipIf(shutil.which("oz0") is None, "needs oz0 on the PATH")
class FakeModelTest(SessionCase):
    def setUp(self) -> None:
        super().setUp()
        ready = Path(tempfile.mkdtemp(prefix="oz0-fake-model-")) / "url"
        self.addCleanup(shutil.rmtree, ready.parent, True)
        script = ready.parent / "script.yaml"
        script.write_text(SCRIPT, encoding="utf-8")
        self.fake = subprocess.Popen(
            ["oz0", "fake-model", "serve", "--script", str(script), "--ready-file", str(ready)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.addCleanup(self.stop_fake)
        deadline = time.monotonic() + TIMEOUT
        # The ready file is the only sign it listens: polled, with the deadline a failure bound.
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
                self.assertEqual(
                    [(t["tool"], t.get("result")) for t in told], [(TOOL, tool_answer(ASKED))]
                )
                self.assertEqual(events[-1]["output"], f"The tool answered: {tool_answer(ASKED)}")

    def test_a_refusal_reaches_the_model(self) -> None:
        for format in FORMATS:
            with self.subTest(format=format):
                events = self.run_in(format, self.deny("billing is told by a person"))
                self.assertFalse([e for e in events if e["type"] == "tool_result"])
                self.assertIn("refused: billing is told by a person", str(events[-1]["output"]))


if __name__ == "__main__":
    unittest.main()
