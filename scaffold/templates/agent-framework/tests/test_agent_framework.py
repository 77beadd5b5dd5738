"""What the real Agent Framework does that the wiring must meet, beyond the tests every framework
template shares (test_agent.py): the request its Chat Completions client sends, a tool's own
check of its arguments, and middleware of the author's own beside the job's. On agent.py's agent
and its tool TOOL (test_agent.py says what to change for an agent.py without it), but the
middleware test's, whose agent is its own (tests/middleware_agent.py).
"""

from __future__ import annotations

import sys
import unittest
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sessions import MODEL_NAME, Run, SessionCase
from test_agent import ASKED, TOOL

MIDDLEWARE_AGENT = Path(__file__).resolve().parent / "middleware_agent.py"


class AgentFrameworkTest(SessionCase):
    def setUp(self) -> None:
        super().setUp()
        self.api.tool_calls = [(TOOL, ASKED)]

    def request_in(self, format: str = "openai-chat") -> dict[str, Any]:
        return self.request(model={"name": MODEL_NAME, "format": format, "record": "fake"})

    def test_openai_chat_asks_for_max_completion_tokens(self) -> None:
        from {{.Package}} import wiring

        # OpenAI refuses max_tokens for its reasoning models; the framework's max_tokens option
        # is sent as max_completion_tokens.
        _, code, run = self.session(self.allow, request=self.request_in())
        self.assertEqual(code, 0, run.log())
        for call in self.api.calls():
            self.assertEqual(call["body"].get("max_completion_tokens"), wiring.MAX_TOKENS)
            self.assertNotIn("max_tokens", call["body"])

    def test_arguments_of_the_wrong_shape_fail_the_tool_not_the_session(self) -> None:
        # A hook may change the arguments; the framework checks them against the tool's schema
        # before it runs, so a wrong shape is the tool's error, shown in the job and read by the
        # model.
        first, *rest = ASKED

        def answer(run: Run, event: dict[str, Any]) -> None:
            allowed = {first: [ASKED[first]]}  # the others left out, and a list for a string
            run.send(
                {"type": "permission", "id": event["id"], "decision": "allow", "arguments": allowed}
            )

        events, code, run = self.session(answer, request=self.request_in())
        self.assertEqual(code, 0, run.log())
        told = [e for e in events if e["type"] == "tool_result"]
        self.assertEqual(len(told), 1, events)
        self.assertNotIn("result", told[0])
        self.assertIn(rest[0], told[0]["error"])
        self.assertIn("The tool answered: ", events[-1]["output"])

    def test_the_authors_middleware_runs_and_the_job_is_asked_last(self) -> None:
        notify = {"team": "billing", "summary": "A customer was charged twice."}
        self.api.tool_calls = [("notify_team", notify)]
        events, code, run = self.session(
            self.allow, request=self.request_in(), argv=[sys.executable, str(MIDDLEWARE_AGENT)]
        )
        self.assertEqual(code, 0, run.log())
        logged = [e["message"] for e in events if e["type"] == "log"]
        self.assertEqual(logged.count("agent middleware"), 1, logged)
        self.assertEqual(logged.count("chat middleware"), 2, "one a model call")
        # The author's function middleware ran first: the job is asked what the tool will run.
        triaged = {**notify, "summary": f"{notify['summary']} (triaged)"}
        asked = [e["arguments"] for e in events if e["type"] == "permission_request"]
        self.assertEqual(asked, [triaged])
        answer = f"told the billing team: {triaged['summary']}"
        self.assertEqual([e.get("result") for e in events if e["type"] == "tool_result"], [answer])
        self.assertEqual(events[-1]["output"], f"The tool answered: {answer}")


if __name__ == "__main__":
    unittest.main()
