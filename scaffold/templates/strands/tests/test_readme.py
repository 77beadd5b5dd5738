"""README.md's example, run as it is written there (tests/readme.py reads it), whatever agent.py is:
triage's tools are of each kind Strands takes (a function, one that takes its ToolContext, an MCP
server's, and a second agent, billing, with an async tool of its own). Each call is asked first
and runs with the arguments the job allowed, or is refused (a refused agent does not run);
billing's text is said under its name; an MCP server that cannot start fails the session, saying
so.
"""

from __future__ import annotations

import sys
import unittest
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from readme import ReadmeCase
from sessions import INSTRUCTIONS
from test_agent import system_text

TRIAGE = [
    ("notify_team", {"team": "billing", "summary": "A customer was charged twice."}),
    ("tag_ticket", {"tag": "refund"}),
    ("open_ticket", {"team": "billing", "priority": 2}),
    ("billing", {"input": "Was order A-17 charged twice?"}),
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
        if system_text(body).startswith(INSTRUCTIONS):
            return "", TRIAGE
        self.assertEqual(system_text(body), "You answer billing questions.")
        return "", BILLING

    def test_each_tool_is_asked_and_runs_and_billing_speaks_for_itself(self) -> None:
        events, run = self.run_example(self.allow, self.files)
        asked = [(e["tool"], e["arguments"]) for e in events if e["type"] == "permission_request"]
        self.assertEqual(asked, TRIAGE + BILLING, run.log())
        told = {e["tool"]: str(e.get("result")) for e in events if e["type"] == "tool_result"}
        # Strands' AgentResult as text, its newline included.
        billing = "The tool answered: order A-17: charged twice\n"
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
        answer = events[-1]["output"]
        self.assertEqual(
            answer,
            "The tool answered: told the billing team: A customer was charged twice.; "
            f"tagged refund; opened a priority 2 ticket for the billing team; {billing}",
        )
        self.assertEqual(self.says(events), f"[billing] {billing.strip()}\n{answer}")

    def test_refused_calls_do_not_run(self) -> None:
        events, run = self.run_example(self.deny("not today"), self.files)
        asked = [e["tool"] for e in events if e["type"] == "permission_request"]
        self.assertEqual(asked, [name for name, _ in TRIAGE], run.log())
        self.assertFalse([e for e in events if e["type"] == "tool_result"])
        self.assertEqual(
            events[-1]["output"], "The tool answered: " + "; ".join(["refused: not today"] * 4)
        )

    def test_an_mcp_server_that_cannot_start_fails_the_session_saying_so(self) -> None:
        events, run = self.run_example(self.allow, {**self.files, "tickets_server.py": None})
        self.assertEqual(events[-1]["type"], "error", run.log())
        self.assertIn("MCPClientInitializationError", events[-1]["message"])
        self.assertIn("tickets_server.py", run.log())  # Python's own word, in the job's log
        self.assertFalse(self.api.calls(), "the agent ran without the server's tools")


if __name__ == "__main__":
    unittest.main()
