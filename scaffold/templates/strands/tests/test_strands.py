"""What the real Strands does that the wiring must meet, beyond the tests every framework template
shares (test_agent.py): the request it sends on OpenAI's Chat Completions, a tool's own check of
its arguments, and the Agent's own checks of what on_the_gateway() gives it. On agent.py's agent
and its tool TOOL (test_agent.py says what to change for an agent.py without it).
"""

from __future__ import annotations

import sys
import unittest
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sessions import MODEL_NAME, Run, SessionCase
from test_agent import ASKED, TOOL


class StrandsTest(SessionCase):
    def request_in(self, format: str) -> dict[str, Any]:
        return self.request(model={"name": MODEL_NAME, "format": format, "record": "fake"})

    def test_openai_chat_asks_for_max_completion_tokens(self) -> None:
        from {{.Package}} import wiring

        # Strands copies params into the request as they are; OpenAI refuses max_tokens for its
        # reasoning models, and takes max_completion_tokens for every model.
        self.api.text = "Sorted."
        events, code, run = self.session(request=self.request_in("openai-chat"))
        self.assertEqual(code, 0, run.log())
        self.assertEqual(events[-1], {"type": "result", "output": "Sorted."})
        body = self.api.calls()[0]["body"]
        self.assertEqual(body.get("max_completion_tokens"), wiring.MAX_TOKENS)
        self.assertNotIn("max_tokens", body)

    def test_anthropic_asks_for_max_tokens(self) -> None:
        from {{.Package}} import wiring

        self.api.text = "Sorted."
        _, code, run = self.session(request=self.request_in("anthropic-messages"))
        self.assertEqual(code, 0, run.log())
        self.assertEqual(self.api.calls()[0]["body"].get("max_tokens"), wiring.MAX_TOKENS)

    def test_arguments_of_the_wrong_shape_fail_the_tool_not_the_session(self) -> None:
        # A hook may change the arguments; the tool checks them as Strands' @tool does, so a
        # wrong shape is the tool's error, shown in the job and read by the model.
        self.api.tool_calls = [(TOOL, ASKED)]
        first, *rest = ASKED

        def answer(run: Run, event: dict[str, Any]) -> None:
            allowed = {first: [ASKED[first]]}  # the others left out, and a list for a string
            run.send(
                {"type": "permission", "id": event["id"], "decision": "allow", "arguments": allowed}
            )

        # On openai-chat: test_agent.py's change of arguments runs on the first format.
        events, code, run = self.session(answer, request=self.request_in("openai-chat"))
        self.assertEqual(code, 0, run.log())
        told = [e for e in events if e["type"] == "tool_result"]
        self.assertEqual(len(told), 1, events)
        self.assertNotIn("result", told[0])
        self.assertIn(rest[0], told[0]["error"])
        self.assertIn("The tool answered: ", events[-1]["output"])
        self.assertIn(rest[0], events[-1]["output"])

    def test_a_limit_is_not_retried_on_openai_chat(self) -> None:
        # Strands' Agent takes retry_strategy=None as one attempt (anything but None or a
        # ModelRetryStrategy it refuses); the SDK clients have max_retries=0. test_agent.py
        # checks the first format.
        self.api.status = 429
        events, code, run = self.session(request=self.request_in("openai-chat"))
        self.assertEqual(code, 1)
        self.assertEqual(events[-1]["type"], "error", run.log())
        self.assertEqual(len(self.api.calls()), 1, "the refused call was retried")


if __name__ == "__main__":
    unittest.main()
