"""The guide's LangGraph snippet as a LangGraph author writes it for `langgraph dev`: the same
create_react_agent, ChatAnthropic (on ANTHROPIC_BASE_URL, the peers benchmark's fake model),
notify_team and instructions. Its tool runs without being asked."""

from pathlib import Path

from langchain_anthropic import ChatAnthropic
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent


def notify_team(team: str, summary: str) -> str:
    """Tell a team about a support ticket: billing, technical, account or general, and the
    ticket in one sentence."""
    return f"told the {team} team: {summary}"


instructions = (Path(__file__).parent / "instructions.md").read_text()
graph = create_react_agent(
    ChatAnthropic(model="claude-sonnet-4-5"), [tool(notify_team)], prompt=instructions
)
