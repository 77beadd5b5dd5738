"""Your agent, on Google ADK: run(session) builds it and runs it on the job's input.

Its model is the session's, through the node's gateway; each tool call is asked first, and a
refusal is the tool's answer; its text streams to the job. wiring.py does that: you write the
agent as ADK agents are written.
"""

from google.adk.agents import LlmAgent
from google.adk.agents.llm_agent import ToolUnion

from .harness import Session
from .wiring import on_the_gateway, run_agent


def notify_team(team: str, summary: str) -> str:
    """Tell a team about a support ticket: billing, technical, account or general, and the
    ticket in one sentence."""
    return f"told the {team} team: {summary}"


# Functions, FunctionTool(...)s and toolsets (an MCP server's: McpToolset, see README.md). List
# each tool's name under harness.tools in the agent definition too.
TOOLS: list[ToolUnion] = [notify_team]


def run(session: Session) -> str:
    agent = LlmAgent(name="triage", tools=TOOLS, **on_the_gateway(session))
    return run_agent(session, agent)
