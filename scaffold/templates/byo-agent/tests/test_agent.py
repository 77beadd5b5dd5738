"""agent.py, run as a node runs it: the harness over a pipe, with a fake model API that answers
the ticket the way legacy.triage() expects. And adapters.asked(), called as a framework calls a
tool.

AgentTest is about the template's own agent.py and legacy.py: when you replace them (with a
LangGraph graph or a CrewAI crew, say), change AgentTest's model_text to what your code asks the
model for, and the events and output it expects to what your agent does; or replace AgentTest
with tests of your agent. AdaptersTest is about adapters.py, whatever agent.py is.

Standard library only: `uv run pytest` and `python3 -m unittest discover -s tests -v` both run it.
"""

from __future__ import annotations

import json
import sys
import unittest
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sessions import PACKAGE, TICKET, Run, SessionCase

REPLY = "Sorry about the double charge; we have refunded the second one."


class AgentTest(SessionCase):
    model_text = json.dumps({"team": "billing", "reply": REPLY})

    def test_happy_path(self) -> None:
        events, code, run = self.session(self.allow)
        self.assertEqual(code, 0, run.log())
        self.assertEqual(
            [e["type"] for e in events], ["say", "permission_request", "tool_result", "result"]
        )
        say, asked, told, result = events
        self.assertEqual(say["text"], "Sorting the ticket. ")
        self.assertEqual(asked["tool"], "notify_team")
        self.assertEqual(asked["arguments"], {"team": "billing", "summary": TICKET})
        self.assertEqual(told["id"], asked["id"])
        self.assertEqual(told["result"], f"told the billing team: {TICKET}")
        self.assertNotIn("error", told)
        self.assertEqual(result["output"], f"billing: {REPLY}")
        self.assertEqual(len(self.api.calls()), 1)

    def test_runs_with_the_arguments_the_job_allowed(self) -> None:
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
        self.assertEqual(events[-1], {"type": "result", "output": f"billing: {REPLY}"})

    def test_denied_tool(self) -> None:
        events, code, run = self.session(self.deny("policy says no"))
        self.assertEqual(code, 0, run.log())
        self.assertEqual(
            [e["type"] for e in events], ["say", "permission_request", "say", "result"]
        )
        self.assertEqual(events[2]["text"], "(The team was not told: policy says no) ")
        self.assertEqual(events[-1]["output"], f"billing: {REPLY}")

    def test_node_closing_stdin_refuses_open_requests(self) -> None:
        events, code, run = self.session(lambda run, event: run.close_stdin())
        self.assertEqual(code, 0, run.log())
        self.assertEqual(events[2]["type"], "say")
        self.assertIn("The team was not told: the node closed the session", events[2]["text"])
        self.assertEqual(events[-1]["type"], "result")


# asked(), called as a framework calls a tool: with named arguments it has already validated,
# so an argument typed with a dataclass (or a pydantic model) arrives as an instance. The
# adapters' run_langgraph() and run_crew() are tested on the real frameworks by oz0's own tests.
ADAPTER_SCRIPT = """
from dataclasses import dataclass

from PKG.harness import main
from PKG.adapters import asked

@dataclass
class Order:
    order_id: str
    detail: bool = False

def lookup_order(order_id: str, detail: bool = False) -> str:
    "Look an order up."
    return "order " + order_id + " ships tomorrow"

def show_order(order: Order) -> str:
    "Show an order."
    assert isinstance(order, Order), repr(order)
    return "order " + order.order_id + (" in detail" if order.detail else "")

def run(session):
    lookup = asked(session, "lookup_order", lookup_order)
    assert lookup.__name__ == "lookup_order" and lookup.__doc__ == "Look an order up."
    show = asked(session, "show_order", show_order)
    return [lookup(order_id="A-1"), lookup("A-2", detail=True), show(order=Order("A-3"))]

main(run)
"""


class AdaptersTest(SessionCase):
    def run_adapters(self, answer: Any) -> tuple[list[dict[str, Any]], int, Run]:
        script = ADAPTER_SCRIPT.replace("PKG", PACKAGE)
        request = self.request(text="Where is my order?", tools=["lookup_order", "show_order"])
        return self.session(answer, request=request, argv=[sys.executable, "-c", script])

    def test_asked_tools_run_when_allowed(self) -> None:
        events, code, run = self.run_adapters(self.allow)
        self.assertEqual(code, 0, run.log())
        asks = [e for e in events if e["type"] == "permission_request"]
        self.assertEqual(
            [(a["tool"], a["arguments"]) for a in asks],
            [
                ("lookup_order", {"order_id": "A-1", "detail": False}),
                ("lookup_order", {"order_id": "A-2", "detail": True}),
                ("show_order", {"order": {"order_id": "A-3", "detail": False}}),
            ],
        )
        self.assertEqual(
            events[-1],
            {
                "type": "result",
                "output": [
                    "order A-1 ships tomorrow",
                    "order A-2 ships tomorrow",
                    "order A-3",
                ],
            },
        )

    def test_changed_arguments_take_the_parameters_type(self) -> None:
        def answer(run: Run, event: dict[str, Any]) -> None:
            arguments = event["arguments"]
            if event["tool"] == "show_order":
                arguments = {"order": {"order_id": "B-7", "detail": True}}
            run.send(
                {
                    "type": "permission",
                    "id": event["id"],
                    "decision": "allow",
                    "arguments": arguments,
                }
            )

        events, code, run = self.run_adapters(answer)
        self.assertEqual(code, 0, run.log())
        self.assertEqual(events[-1]["output"][2], "order B-7 in detail")

    def test_a_refused_call_is_the_tools_answer(self) -> None:
        events, code, run = self.run_adapters(self.deny("orders are private"))
        self.assertEqual(code, 0, run.log())
        self.assertFalse([e for e in events if e["type"] == "tool_result"])
        self.assertEqual(events[-1]["output"], ["refused: orders are private"] * 3)


if __name__ == "__main__":
    unittest.main()
