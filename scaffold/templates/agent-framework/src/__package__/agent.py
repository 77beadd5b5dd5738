"""Your agent, on Microsoft Agent Framework: run(session) builds it and runs it on the job's input.

Its model is the session's, through the node's gateway; each tool call is asked first, and a
refusal is the tool's answer; its text streams to the job. wiring.py does that: you write the
agent as Agent Framework agents are written.
"""

from agent_framework import Agent, tool

from .harness import Session
from .wiring import on_the_gateway, run_agent


@tool
def notify_team(team: str, summary: str) -> str:
    """Tell a team about a support ticket: billing, technical, account or general, and the
    ticket in one sentence."""
    return f"told the {team} team: {summary}"


def run(session: Session) -> str:
    agent = Agent(
        instructions=session.instructions,  # prompts/<name>.md
        tools=[notify_team],  # list each under harness.tools in the agent definition too
        **on_the_gateway(session),
    )
    return run_agent(session, agent)
