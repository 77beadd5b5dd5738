"""What ADK does that the shared tests do not show, on the real google-adk: every kind of tool
is asked first and run by ADK itself with the arguments the job allowed; one turn's tool calls
are asked together (ADK runs them concurrently); an MCP server's tools are asked like any; what
ADK adds to the system prompt for its features stays; a sub-agent in single_turn mode is a tool.
The agents are in tests/agents.py, with tools of their own: whatever agent.py is, these stand.
"""

from __future__ import annotations

import json
import sys
import unittest
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sessions import INSTRUCTIONS, Run, SessionCase
from test_agent import system_text

AGENTS = Path(__file__).resolve().parent / "agents.py"


class Together:
    """Answers a session's permission requests once `count` of them have come, each with
    answer(event): proof that they were all asked before any was answered."""

    def __init__(self, count: int, answer: Any) -> None:
        self.count = count
        self.answer = answer
        self.asked: list[dict[str, Any]] = []

    def __call__(self, run: Run, event: dict[str, Any]) -> None:
        self.asked.append(event)
        if len(self.asked) == self.count:
            for asked in self.asked:
                run.send({"type": "permission", "id": asked["id"], **self.answer(asked)})


class AdkTest(SessionCase):
    def run_agent(self, kind: str, answer: Any) -> tuple[list[dict[str, Any]], Run]:
        events, code, run = self.session(answer, argv=[sys.executable, str(AGENTS), kind])
        self.assertEqual(code, 0, run.log())
        return events, run

    def test_every_kind_of_tool_is_asked_then_run_by_adk_with_the_allowed_arguments(self) -> None:
        self.api.tool_calls = [
            ("look_up_order", {"order": "A-17"}),
            ("tag_ticket", {"tag": "refund"}),
            ("escalate", {"reason": "charged twice"}),
            ("notify_team", {"team": "billing"}),  # no summary: ADK's own check answers it
        ]

        def allow(asked: dict[str, Any]) -> dict[str, Any]:
            arguments = dict(asked["arguments"])
            if asked["tool"] == "escalate":
                arguments["reason"] = "changed by a hook"
            return {"decision": "allow", "arguments": arguments}

        together = Together(4, allow)
        events, run = self.run_agent("tools", together)
        self.assertEqual(
            sorted((a["tool"], a["arguments"]) for a in together.asked),
            sorted(self.api.tool_calls),
            run.log(),
        )
        ids = {a["tool"]: a["id"] for a in together.asked}
        told = {e["id"]: e for e in events if e["type"] == "tool_result"}
        self.assertEqual(told[ids["look_up_order"]]["result"], "order A-17 was paid twice")
        self.assertEqual(told[ids["tag_ticket"]]["result"], "triage tagged the ticket refund")
        self.assertEqual(told[ids["escalate"]]["result"], "escalated: changed by a hook")
        missing = told[ids["notify_team"]]["error"]
        self.assertIn("mandatory input parameters are not present:\nsummary", missing)
        # ADK gives the model the answers in the order of its calls, whatever order they ran in.
        self.assertEqual(
            events[-1]["output"],
            "The tool answered: order A-17 was paid twice; triage tagged the ticket refund; "
            f"escalated: changed by a hook; {json.dumps({'error': missing})}",
        )

    def test_an_mcp_tool_is_asked_refused_or_run_with_the_allowed_arguments(self) -> None:
        self.api.tool_calls = [
            ("open_ticket", {"team": "billing", "priority": 1}),
            ("open_ticket", {"team": "billing", "priority": 2}),
            ("open_ticket", {"team": "billing", "priority": 3}),
        ]
        answers = {
            1: {"decision": "deny", "reason": "priority 1 is for people to set"},
            2: {"decision": "allow", "arguments": {"team": "account", "priority": 4}},
            3: {"decision": "allow", "arguments": {"team": "billing", "priority": "soon"}},
        }
        together = Together(3, lambda asked: answers[asked["arguments"]["priority"]])
        events, run = self.run_agent("mcp", together)
        self.assertEqual(
            sorted((a["tool"], a["arguments"]["priority"]) for a in together.asked),
            [("open_ticket", 1), ("open_ticket", 2), ("open_ticket", 3)],
            run.log(),
        )
        ids = {a["arguments"]["priority"]: a["id"] for a in together.asked}
        told = {e["id"]: e for e in events if e["type"] == "tool_result"}
        self.assertNotIn(ids[1], told, "a refused call ran")
        opened = "opened a priority 4 ticket for the account team"
        self.assertIn(opened, str(told[ids[2]].get("result")), told[ids[2]])
        # The MCP server checks its arguments itself: a hook's wrong shape fails for real.
        self.assertIn("priority", told[ids[3]]["error"])
        refused = "refused: priority 1 is for people to set"
        output = events[-1]["output"]
        self.assertTrue(output.startswith(f"The tool answered: {refused}; {opened}; "), output)

    def test_what_adk_adds_to_the_system_prompt_stays_but_the_name_line(self) -> None:
        self.api.text = "Sorted."
        events, run = self.run_agent("sub-agent", None)
        self.assertEqual(events[-1], {"type": "result", "output": "Sorted."}, run.log())
        system = system_text(self.api.calls()[0]["body"])
        self.assertTrue(system.startswith(INSTRUCTIONS), system)
        self.assertIn("transfer_to_agent", system)  # ADK's hand-over to billing
        self.assertIn("billing", system)
        self.assertNotIn("Your internal name is", system)

    def test_a_single_turn_sub_agent_is_a_tool_asked_by_its_name(self) -> None:
        # ADK calls a sub-agent in mode="single_turn" as a tool named after it: asked like any
        # (an agent lists it under harness.tools), refused like any, run by ADK when allowed.
        def model(
            body: dict[str, Any], answers: list[str], offered: list[str]
        ) -> tuple[str, list[tuple[str, Any]]]:
            if system_text(body).startswith("You answer billing questions."):
                return "Refunded.", []
            if answers:
                return "The tool answered: " + "; ".join(answers), []
            self.assertIn("billing", offered)
            return "", [("billing", {"request": "Refund order A-17."})]

        self.api.script = model
        events, run = self.run_agent("single-turn", self.allow)
        asked = [(e["tool"], e["arguments"]) for e in events if e["type"] == "permission_request"]
        self.assertEqual(asked, [("billing", {"request": "Refund order A-17."})], run.log())
        told = [e for e in events if e["type"] == "tool_result"]
        self.assertEqual([(t["tool"], t.get("result")) for t in told], [("billing", "Refunded.")])
        self.assertEqual(events[-1]["output"], "The tool answered: Refunded.")
        events, run = self.run_agent("single-turn", self.deny("billing is for people"))
        self.assertFalse([e for e in events if e["type"] == "tool_result"])
        self.assertEqual(events[-1]["output"], "The tool answered: refused: billing is for people")


if __name__ == "__main__":
    unittest.main()
