"""README.md's example, run as it is written there (tests/readme.py reads it), whatever agent.py is:
triage hands a billing question over to a second agent, billing; their tools are of each kind ADK
takes (a function, one that takes its ToolContext, an async one, an MCP server's). Each call is
asked first and runs with the arguments the job allowed, or is refused; what the context tool
keeps in ADK's state reaches billing's instruction; billing's text is said under its name; an MCP
server that cannot start fails the session, saying so.
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
    ("note_for_billing", {"note": "the second charge is to be refunded"}),
]
BILLING = [
    ("look_up_order", {"order_id": "A-17"}),
    ("open_ticket", {"team": "billing", "priority": 2}),
]


class ReadmeTest(ReadmeCase):
    def setUp(self) -> None:
        super().setUp()
        self.systems: dict[str, list[str]] = {"triage": [], "billing": []}

    def model(
        self, body: dict[str, Any], answers: list[str], offered: list[str]
    ) -> tuple[str, list[tuple[str, Any]]]:
        """Triage calls its tools, then hands over to billing, which calls its own, then says
        what they answered."""
        system = system_text(body)
        if system.startswith(INSTRUCTIONS):
            self.systems["triage"].append(system)
            if not answers:
                return "", TRIAGE
            return "", [("transfer_to_agent", {"agent_name": "billing"})]
        self.systems["billing"].append(system)
        if len(self.systems["billing"]) == 1:
            return "", BILLING
        return "The tool answered: " + "; ".join(answers), []

    def test_each_tool_is_asked_and_runs_and_billing_speaks_for_itself(self) -> None:
        events, run = self.run_example(self.allow, self.files)
        asked = [(e["tool"], e["arguments"]) for e in events if e["type"] == "permission_request"]
        self.assertEqual(asked, TRIAGE + BILLING, run.log())
        told = {e["tool"]: str(e.get("result")) for e in events if e["type"] == "tool_result"}
        self.assertEqual(
            told["notify_team"], "told the billing team: A customer was charged twice."
        )
        self.assertEqual(told["note_for_billing"], "noted: the second charge is to be refunded")
        self.assertEqual(told["look_up_order"], "order A-17: charged twice")
        self.assertIn("opened a priority 2 ticket for the billing team", told["open_ticket"])
        # Triage's instruction is the agent's (prompts/); billing's its own, with the note the
        # context tool kept in ADK's state.
        self.assertTrue(self.systems["triage"][0].startswith(INSTRUCTIONS))
        billing = self.systems["billing"][0]
        self.assertTrue(billing.startswith("You answer billing questions."), billing)
        self.assertIn("The note on the ticket: the second charge is to be refunded", billing)
        self.assertNotIn(INSTRUCTIONS, billing)
        answer = events[-1]["output"]
        self.assertTrue(answer.startswith("The tool answered: order A-17: charged twice; "), answer)
        self.assertEqual(self.says(events), f"[billing] {answer}")

    def test_refused_calls_do_not_run(self) -> None:
        events, run = self.run_example(self.deny("not today"), self.files)
        asked = [e["tool"] for e in events if e["type"] == "permission_request"]
        self.assertEqual(asked, [name for name, _ in TRIAGE + BILLING], run.log())
        self.assertFalse([e for e in events if e["type"] == "tool_result"])
        self.assertIn("The note on the ticket: \n", self.systems["billing"][0] + "\n")
        self.assertEqual(
            events[-1]["output"], "The tool answered: refused: not today; refused: not today"
        )

    def test_an_mcp_server_that_cannot_start_fails_the_session_saying_so(self) -> None:
        events, run = self.run_example(self.allow, {**self.files, "tickets_server.py": None})
        self.assertEqual(events[-1]["type"], "error", run.log())
        message = events[-1]["message"]
        self.assertIn("agent billing: its McpToolset", message)
        self.assertIn("tickets_server.py`) could not load its tools", message)
        self.assertFalse(self.api.calls(), "the agent ran without the server's tools")


if __name__ == "__main__":
    unittest.main()
