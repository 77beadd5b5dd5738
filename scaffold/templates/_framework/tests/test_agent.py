"""agent.py and wiring.py on the framework `uv sync` installed, run as a node runs them (the
harness over a pipe) against a fake model API that speaks as the real ones do (server-sent events
to the framework's streaming client): it calls the agent's tool TOOL by its name, then says what
the tool answered.

What these check is the wiring, on whatever agent agent.py builds: an agent with more tools, a
second agent or an MCP server's tools keeps them green. An agent.py without notify_team needs
TOOL, ASKED and tool_answer() below to be one of its tools, arguments that tool takes, and what
it answers to them (test_framework.py and the framework's own test file use them too).
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

MANIFEST = (ROOT / "oz0-plugin.yaml").read_text(encoding="utf-8")
FORMATS = re.findall(r"[\w-]+", re.search(r"formats:\s*\[([^\]]*)\]", MANIFEST)[1])  # type: ignore[index]
TOOL = "notify_team"
"""The tool of agent.py's agent that the fake model calls."""
ASKED = {"team": "billing", "summary": "A customer was charged twice."}
"""The arguments the fake model calls the tool with."""


def tool_answer(arguments: dict[str, Any]) -> str:
    """What the tool answers to these arguments."""
    return f"told the {arguments['team']} team: {arguments['summary']}"


def system_text(body: dict[str, Any]) -> str:
    """The system prompt of a model call, in either API's shape, as one text."""
    system: Any = body.get("system")
    if system is None and body.get("messages"):
        first = body["messages"][0]
        system = first.get("content") if first.get("role") in ("system", "developer") else None
    if isinstance(system, list):
        return "".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return "" if system is None else str(system)


class AgentTest(SessionCase):
    def setUp(self) -> None:
        super().setUp()
        self.api.tool_calls = [(TOOL, ASKED)]

    def request_in(self, format: str) -> dict[str, Any]:
        return self.request(model={"name": MODEL_NAME, "format": format, "record": "fake"})

    def test_a_tool_call_is_asked_and_answered_on_the_gateway(self) -> None:
        for format in FORMATS:
            with self.subTest(format=format):
                self.api.requests.clear()
                events, code, run = self.session(self.allow, request=self.request_in(format))
                self.assertEqual(code, 0, run.log())
                asked = [e for e in events if e["type"] == "permission_request"]
                told = [e for e in events if e["type"] == "tool_result"]
                self.assertEqual(
                    [(a["tool"], a["arguments"]) for a in asked], [(TOOL, ASKED)], run.log()
                )
                answer = tool_answer(ASKED)
                self.assertEqual(
                    [(t["id"], t.get("result")) for t in told], [(asked[0]["id"], answer)]
                )
                self.assertEqual(
                    events[-1], {"type": "result", "output": f"The tool answered: {answer}"}
                )
                self.assertEqual(self.says(events), f"The tool answered: {answer}")
                self.assert_on_the_gateway(format, self.api.calls())

    def assert_on_the_gateway(self, format: str, calls: list[dict[str, Any]]) -> None:
        """The model calls: on the gateway with the session's key and headers, streamed, the
        instructions the system prompt (before what the framework adds for its features: a hand
        over to a sub-agent, say), the tool offered."""
        self.assertEqual(len(calls), 2, "a call with the tool offered, one after it")
        for call in calls:
            headers = {k.lower(): v for k, v in call["headers"].items()}
            body = call["body"]
            self.assertEqual(headers["oz0-job"], JOB)
            self.assertEqual(headers["oz0-agent"], NAME)
            self.assertEqual(body["model"], MODEL_NAME)
            self.assertIs(body.get("stream"), True, "the text streams to the job")
            self.assertTrue(system_text(body).startswith(INSTRUCTIONS), system_text(body))
            if format == "anthropic-messages":
                self.assertEqual(call["path"], "/gateway/anthropic/v1/messages")
                # The Anthropic SDK sends its key as x-api-key or, since 2.x, as a bearer
                # token; the gateway takes either.
                key = headers.get("x-api-key") or headers.get("authorization", "")
                self.assertEqual(key.removeprefix("Bearer "), SESSION_KEY)
                self.assertIn(TOOL, [t["name"] for t in body["tools"]])
            else:
                self.assertEqual(call["path"], "/gateway/openai/chat/completions")
                self.assertEqual(headers["authorization"], f"Bearer {SESSION_KEY}")
                self.assertIn(TOOL, [t["function"]["name"] for t in body["tools"]])
        self.assertIn(TICKET, str(calls[0]["body"]["messages"]))

    def test_the_tool_runs_with_the_arguments_the_job_allowed(self) -> None:
        changed = {key: f"{value} (changed by a hook)" for key, value in ASKED.items()}

        def answer(run: Run, event: dict[str, Any]) -> None:
            run.send(
                {"type": "permission", "id": event["id"], "decision": "allow", "arguments": changed}
            )

        events, code, run = self.session(answer, request=self.request_in(FORMATS[0]))
        self.assertEqual(code, 0, run.log())
        told = next(e for e in events if e["type"] == "tool_result")
        self.assertEqual(told["result"], tool_answer(changed))
        self.assertEqual(events[-1]["output"], f"The tool answered: {tool_answer(changed)}")

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

    def test_a_limit_is_not_retried(self) -> None:
        self.api.status = 429  # the gateway's answer past limits.max_steps
        events, code, run = self.session(request=self.request_in(FORMATS[0]))
        self.assertEqual(code, 1)
        self.assertEqual(events[-1]["type"], "error", run.log())
        self.assertEqual(len(self.api.calls()), 1, "the refused call was retried")


if __name__ == "__main__":
    unittest.main()
