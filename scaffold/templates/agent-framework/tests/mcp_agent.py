"""An agent with an MCP server's tools, written as README.md shows: Agent Framework's
MCPStdioTool starts the server (tests/mcp_server.py) over stdio for the run, and the agent calls
its tools like its own: each call asked first. test_mcp.py runs it as a harness: python
tests/mcp_agent.py.
"""

import sys
from pathlib import Path

from agent_framework import Agent, MCPStdioTool

from {{.Package}}.harness import Session, main
from {{.Package}}.wiring import (
    on_the_gateway,
    run_agent,
)

SERVER = Path(__file__).resolve().parent / "mcp_server.py"


def run(session: Session) -> str:
    orders = MCPStdioTool(name="orders", command=sys.executable, args=[str(SERVER)])
    agent = Agent(
        instructions=session.instructions,
        tools=[orders],  # list each of its tools under harness.tools too: lookup_order
        **on_the_gateway(session),
    )
    return run_agent(session, agent)  # the server runs while the agent does


if __name__ == "__main__":
    main(run)
