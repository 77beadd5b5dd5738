"""An agent with an MCP server's tools, written as README.md shows: Strands' MCPClient starts
the server (tests/mcp_server.py) over stdio and lists its tools, which the agent calls like its
own: each call asked first. test_mcp.py runs it as a harness: python tests/mcp_agent.py.
"""

import sys
from pathlib import Path

from mcp import StdioServerParameters, stdio_client
from strands import Agent
from strands.tools.mcp import MCPClient

from {{.Package}}.harness import Session, main
from {{.Package}}.wiring import (
    on_the_gateway,
    text_of,
)

SERVER = Path(__file__).resolve().parent / "mcp_server.py"


def run(session: Session) -> str:
    server = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    # Strands' MCPTransport type names mcp 1's stream pair; mcp 2's stdio_client, which its
    # compatibility layer takes, types its own.
    orders = MCPClient(
        lambda: stdio_client(server),  # pyright: ignore[reportArgumentType]
        startup_timeout=120,  # not Strands' 30 s: on a busy machine Python starts slowly
    )
    with orders:  # the server runs while the agent does
        agent = Agent(
            system_prompt=session.instructions,
            tools=orders.list_tools_sync(),  # list each under harness.tools too: lookup_order
            **on_the_gateway(session),
        )
        return text_of(agent(session.text))


if __name__ == "__main__":
    main(run)
