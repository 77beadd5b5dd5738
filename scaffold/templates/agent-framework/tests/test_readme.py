"""README.md's example, run as it is written there (tests/readme.py reads it), whatever agent.py is:
triage's tools are of each kind the framework takes (a function, one that takes its
FunctionInvocationContext and keeps state in the session, an MCP server's, and a second agent,
billing, with an async tool of its own). Each call is asked first and runs with the arguments the
job allowed, or is refused (a refused agent does not run); an MCP server that cannot start fails
the session, saying which.
"""

from __future__ import annotations

import sys
import unittest
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from readme import ReadmeCase
from sessions import INSTRUCTIONS, MODEL_NAME
from test_agent import system_text

TRIAGE = [
    ("notify_team", {"team": "billing", "summary": "A customer was charged twice."}),
    ("tag_ticket", {"tag": "refund"}),
    ("open_ticket", {"team": "billing", "priority": 2}),
    ("billing", {"task": "Was order A-17 charged twice?"}),
]
BILLING = [("look_up_order", {"order_id": "A-17"})]


class ReadmeTest(ReadmeCase):
    def model(
        self, body: dict[str, Any], answers: list[str], offered: list[str]
    ) -> tuple[str, list[tuple[str, Any]]]:
        """Triage calls its tools, billing among them, which calls its own; each then says what
        its tools answered."""
        if answers:
            return "The tool answered: " + "; ".join(answers), []
        if system_text(body) == INSTRUCTIONS:
            return "", TRIAGE
        self.assertEqual(system_text(body), "You answer billing questions.")
        return "", BILLING

    def example_request(self) -> dict[str, Any]:
        return self.request(model={"name": MODEL_NAME, "format": "openai-chat", "record": "f"})

    def test_each_tool_is_asked_and_runs(self) -> None:
        events, run = self.run_example(self.allow, self.files)
        asked = [(e["tool"], e["arguments"]) for e in events if e["type"] == "permission_request"]
        # The framework runs one turn's calls at once: they are asked in no fixed order.
        self.assertCountEqual(asked, TRIAGE + BILLING, run.log())
        told = {e["tool"]: str(e.get("result")) for e in events if e["type"] == "tool_result"}
        billing = "The tool answered: order A-17: charged twice"
        self.assertEqual(
            told,
            {
                "notify_team": "told the billing team: A customer was charged twice.",
                "tag_ticket": "tagged refund",
                "open_ticket": "opened a priority 2 ticket for the billing team",
                "look_up_order": "order A-17: charged twice",
                "billing": billing,
            },
        )
        # The model reads the answers in the order of its calls.
        self.assertEqual(
            events[-1]["output"],
            "The tool answered: told the billing team: A customer was charged twice.; "
            f"tagged refund; opened a priority 2 ticket for the billing team; {billing}",
        )

    def test_refused_calls_do_not_run(self) -> None:
        events, run = self.run_example(self.deny("not today"), self.files)
        asked = [e["tool"] for e in events if e["type"] == "permission_request"]
        self.assertCountEqual(asked, [name for name, _ in TRIAGE], run.log())
        self.assertFalse([e for e in events if e["type"] == "tool_result"])
        refused = "; ".join(["refused: not today"] * len(TRIAGE))
        self.assertEqual(events[-1]["output"], f"The tool answered: {refused}")

    def test_an_mcp_server_that_cannot_start_fails_the_session_saying_so(self) -> None:
        events, run = self.run_example(self.allow, {**self.files, "tickets_server.py": None})
        self.assertEqual(events[-1]["type"], "error", run.log())
        message = events[-1]["message"]
        self.assertIn("the agent: its MCP server tickets (`", message)
        self.assertIn("tickets_server.py`) could not start: ", message)
        self.assertFalse(self.api.calls(), "the agent ran without the server's tools")


if __name__ == "__main__":
    unittest.main()
