"""The byo-agent template's agent as the guide's LangGraph snippet, with the template's
notify_team (listed under harness.tools in the agent definition)."""

from langchain_anthropic import ChatAnthropic
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent

from .adapters import asked, run_langgraph


def notify_team(team: str, summary: str) -> str:
    """Tell a team about a support ticket: billing, technical, account or general, and the
    ticket in one sentence."""
    return f"told the {team} team: {summary}"


def run(session):
    notify = tool(asked(session, "notify_team", notify_team))  # asked before every call
    graph = create_react_agent(
        ChatAnthropic(model=session.model_name), [notify], prompt=session.instructions
    )
    return run_langgraph(session, graph)
