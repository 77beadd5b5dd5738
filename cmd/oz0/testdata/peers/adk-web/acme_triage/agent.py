"""The adk template's agent as an ADK author writes it for `adk web`: the same notify_team and
instructions, on ADK's AnthropicLlm with the Anthropic client on ANTHROPIC_BASE_URL (the peers
benchmark's fake model). Its tool runs without being asked."""

import os
from pathlib import Path

from anthropic import AsyncAnthropic
from google.adk.agents import LlmAgent
from google.adk.models.anthropic_llm import AnthropicLlm


def notify_team(team: str, summary: str) -> str:
    """Tell a team about a support ticket: billing, technical, account or general, and the
    ticket in one sentence."""
    return f"told the {team} team: {summary}"


client = AsyncAnthropic(base_url=os.environ["ANTHROPIC_BASE_URL"])

root_agent = LlmAgent(
    name="triage",
    model=AnthropicLlm(model="claude-sonnet-4-5", max_tokens=8192, client=client),
    instruction=(Path(__file__).parent / "instructions.md").read_text(),
    tools=[notify_team],
)
