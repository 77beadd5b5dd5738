"""agent.py and wiring.py, run as a node runs them (the harness over a pipe), on stand-ins of the
framework (tests/standins/: its module paths, classes and signatures, driving a tool loop the way
it does) against a fake model API that calls the agent's tool and then says what it answered.

Standard library only: `uv run pytest` and `python3 -m unittest discover -s tests -v` both run it.
tests/test_framework.py runs the real framework.
"""

from __future__ import annotations

import re
import sys
import unittest
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sessions import (
    INSTRUCTIONS,
    JOB,
    MODEL_NAME,
    NAME,
    ROOT,
    SESSION_KEY,
    TICKET,
    Run,
    SessionCase,
)

STANDINS = Path(__file__).resolve().parent / "standins"
MANIFEST = (ROOT / "oz0-plugin.yaml").read_text(encoding="utf-8")
FORMATS = re.findall(r"[\w-]+", re.search(r"formats:\s*\[([^\]]*)\]", MANIFEST)[1])  # type: ignore[index]
ASKED = {"team": "billing", "summary": "A customer was charged twice."}
"""The arguments the fake model calls the tool with."""


class AgentTest(SessionCase):
    extra_pythonpath = (STANDINS,)

    def setUp(self) -> None:
        super().setUp()
        self.api.tool_arguments = ASKED

    def request_in(self, format: str) -> dict[str, Any]:
        return self.request(model={"name": MODEL_NAME, "format": format, "record": "fake"})

    def test_a_tool_call_is_asked_and_answered(self) -> None:
        for format in FORMATS:
            with self.subTest(format=format):
                events, code, run = self.session(self.allow, request=self.request_in(format))
                self.assertEqual(code, 0, run.log())
                asked = [e for e in events if e["type"] == "permission_request"]
                told = [e for e in events if e["type"] == "tool_result"]
                self.assertEqual(
                    [(a["tool"], a["arguments"]) for a in asked],
                    [("notify_team", ASKED)],
                    run.log(),
                )
                answer = "told the billing team: A customer was charged twice."
                self.assertEqual(
                    [(t["id"], t.get("result")) for t in told], [(asked[0]["id"], answer)]
                )
                self.assertEqual(
                    events[-1], {"type": "result", "output": f"The tool answered: {answer}"}
                )
                self.assertEqual(self.says(events), f"The tool answered: {answer}")

    def test_the_tool_runs_with_the_arguments_the_job_allowed(self) -> None:
        def answer(run: Run, event: dict[str, Any]) -> None:
            run.send(
                {
                    "type": "permission",
                    "id": event["id"],
                    "decision": "allow",
                    "arguments": {"team": "account", "summary": "changed by a hook"},
                }
            )

        events, code, run = self.session(answer)
        self.assertEqual(code, 0, run.log())
        told = next(e for e in events if e["type"] == "tool_result")
        self.assertEqual(told["result"], "told the account team: changed by a hook")
        self.assertEqual(
            events[-1]["output"], "The tool answered: told the account team: changed by a hook"
        )

    def test_a_refusal_is_the_tools_answer(self) -> None:
        for format in FORMATS:
            with self.subTest(format=format):
                events, code, run = self.session(
                    self.deny("billing is told by a person"), request=self.request_in(format)
                )
                self.assertEqual(code, 0, run.log())
                self.assertFalse([e for e in events if e["type"] == "tool_result"])
                self.assertEqual(
                    events[-1]["output"], "The tool answered: refused: billing is told by a person"
                )

    def test_the_model_client_is_on_the_gateway(self) -> None:
        for format in FORMATS:
            with self.subTest(format=format):
                self.api.requests.clear()
                _, code, run = self.session(self.allow, request=self.request_in(format))
                self.assertEqual(code, 0, run.log())
                calls = self.api.calls()
                self.assertEqual(len(calls), 2, "a call with the tool offered, one after it")
                for call in calls:
                    headers = {k.lower(): v for k, v in call["headers"].items()}
                    body = call["body"]
                    self.assertEqual(headers["oz0-job"], JOB)
                    self.assertEqual(headers["oz0-agent"], NAME)
                    self.assertEqual(body["model"], MODEL_NAME)
                    if format == "anthropic-messages":
                        self.assertEqual(call["path"], "/gateway/anthropic/v1/messages")
                        self.assertEqual(headers["x-api-key"], SESSION_KEY)
                        self.assertEqual(body["system"], INSTRUCTIONS)
                        self.assertEqual([t["name"] for t in body["tools"]], ["notify_team"])
                    else:
                        self.assertEqual(call["path"], "/gateway/openai/chat/completions")
                        self.assertEqual(headers["authorization"], f"Bearer {SESSION_KEY}")
                        self.assertEqual(
                            body["messages"][0], {"role": "system", "content": INSTRUCTIONS}
                        )
                        self.assertEqual(
                            [t["function"]["name"] for t in body["tools"]], ["notify_team"]
                        )
                self.assertIn(TICKET, str(calls[0]["body"]["messages"]))

    def test_a_limit_is_not_retried(self) -> None:
        self.api.status = 429  # the gateway's answer past limits.max_steps
        events, code, run = self.session()
        self.assertEqual(code, 1)
        self.assertEqual(events[-1]["type"], "error", run.log())
        self.assertEqual(len(self.api.calls()), 1, "the refused call was retried")


if __name__ == "__main__":
    unittest.main()
