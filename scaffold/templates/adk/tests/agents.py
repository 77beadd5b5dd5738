"""ADK agents for tests/test_adk.py, each run as the harness runs agent.py:

python tests/agents.py KIND

tools: an async tool, a tool with a tool_context, a FunctionTool(...) and notify_team; mcp: an
MCP server's tools (McpToolset over stdio, tests/mcp_server.py); sub-agent: an agent that can
hand over to another; single-turn: one that calls another (mode="single_turn") as a tool.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.tools import FunctionTool
from google.adk.tools.mcp_tool import McpToolset, StdioConnectionParams
from google.adk.tools.tool_context import ToolContext
from mcp import StdioServerParameters

from {{.Package}}.harness import Session, main
from {{.Package}}.wiring import (
    on_the_gateway,
    run_agent,
)

HERE = Path(__file__).resolve().parent


async def look_up_order(order: str) -> str:
    """Look an order up."""
    return f"order {order} was paid twice"


def tag_ticket(tag: str, tool_context: ToolContext) -> str:
    """Tag the ticket."""
    return f"{tool_context.agent_name} tagged the ticket {tag}"


def notify_team(team: str, summary: str) -> str:
    """Tell a team about a support ticket."""
    return f"told the {team} team: {summary}"


def escalate(reason: str) -> str:
    """Escalate the ticket to a person."""
    return f"escalated: {reason}"


def tools(session: Session) -> Any:
    tools = [look_up_order, tag_ticket, FunctionTool(escalate), notify_team]
    return run_agent(session, LlmAgent(name="triage", tools=tools, **on_the_gateway(session)))


def mcp(session: Session) -> Any:
    server = StdioServerParameters(command=sys.executable, args=[str(HERE / "mcp_server.py")])
    # ADK's timeout (5 s by default) bounds the connection and each call: a bound on failure
    # here, generous for a busy machine.
    params = StdioConnectionParams(server_params=server, timeout=120)
    toolset = McpToolset(connection_params=params)
    return run_agent(session, LlmAgent(name="triage", tools=[toolset], **on_the_gateway(session)))


def sub_agent(session: Session) -> Any:
    billing = LlmAgent(
        name="billing", description="Answers billing questions.", **on_the_gateway(session)
    )
    agent = LlmAgent(
        name="triage", tools=[notify_team], sub_agents=[billing], **on_the_gateway(session)
    )
    return run_agent(session, agent)


def single_turn(session: Session) -> Any:
    billing = LlmAgent(
        name="billing",
        description="Answers billing questions.",
        instruction="You answer billing questions.",
        mode="single_turn",
        **on_the_gateway(session),
    )
    agent = LlmAgent(
        name="triage", tools=[notify_team], sub_agents=[billing], **on_the_gateway(session)
    )
    return run_agent(session, agent)


if __name__ == "__main__":
    kinds = {"tools": tools, "mcp": mcp, "sub-agent": sub_agent, "single-turn": single_turn}
    main(kinds[sys.argv[1]])
