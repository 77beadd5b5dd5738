"""An MCP server's tool, called by the agent (tests/mcp_agent.py, on a real MCP server over
stdio: tests/mcp_server.py): asked first like any tool, refused when the job says no (the model
reads "refused: <why>" and the server never runs it), run with the arguments the job allowed. On
the manifest's first format: MCP does not change with the model's. The agent is mcp_agent.py's,
not agent.py's: whatever agent.py is, these stand.
"""

from __future__ import annotations

import sys
import unittest
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sessions import MODEL_NAME, Run, SessionCase
from test_agent import FORMATS

AGENT = Path(__file__).resolve().parent / "mcp_agent.py"


class MCPTest(SessionCase):
    def setUp(self) -> None:
        super().setUp()
        self.api.tool_arguments = {"order_id": "A-1"}

    def run_agent(self, format: str, answer: Any) -> tuple[list[dict[str, Any]], Run]:
        request = self.request(
            model={"name": MODEL_NAME, "format": format, "record": "fake"},
            tools=["lookup_order"],
        )
        events, code, run = self.session(answer, request=request, argv=[sys.executable, str(AGENT)])
        self.assertEqual(code, 0, run.log())
        return events, run

    def ran(self) -> str:
        """What the MCP server ran, a line a call."""
        calls = self.workdir / "calls.txt"
        text = calls.read_text(encoding="utf-8") if calls.exists() else ""
        calls.unlink(missing_ok=True)
        return text

    def test_an_mcp_tool_runs_with_the_arguments_the_job_allowed(self) -> None:
        def answer(run: Run, event: dict[str, Any]) -> None:
            allowed = {"order_id": "B-2"}  # a hook changed them
            run.send(
                {"type": "permission", "id": event["id"], "decision": "allow", "arguments": allowed}
            )

        events, run = self.run_agent(FORMATS[0], answer)
        asked = [e for e in events if e["type"] == "permission_request"]
        self.assertEqual(
            [(a["tool"], a["arguments"]) for a in asked],
            [("lookup_order", {"order_id": "A-1"})],
            run.log(),
        )
        told = [e for e in events if e["type"] == "tool_result"]
        self.assertEqual(
            [(t["id"], t["tool"], t.get("result")) for t in told],
            [(asked[0]["id"], "lookup_order", "order B-2: charged twice")],
        )
        self.assertEqual(self.ran(), "lookup_order B-2\n")
        self.assertEqual(
            events[-1], {"type": "result", "output": "The tool answered: order B-2: charged twice"}
        )

    def test_a_refused_mcp_tool_does_not_run(self) -> None:
        events, _ = self.run_agent(FORMATS[0], self.deny("orders are looked up by a person"))
        self.assertEqual(
            [e["tool"] for e in events if e["type"] == "permission_request"], ["lookup_order"]
        )
        self.assertFalse([e for e in events if e["type"] == "tool_result"])
        self.assertEqual(self.ran(), "")
        self.assertEqual(
            events[-1]["output"], "The tool answered: refused: orders are looked up by a person"
        )


if __name__ == "__main__":
    unittest.main()
