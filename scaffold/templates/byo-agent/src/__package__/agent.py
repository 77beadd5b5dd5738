"""Your agent: run(session) gets the job's session and returns the answer.

The answer is text, or anything JSON can hold. Use session.say() to stream, session.complete()
for a model call through the node's LLM proxy (session.complete(prompt, say=True) streams the
model's text to the live view as it arrives), and session.call_tool() before each tool call.
"""

from .harness import Refused, Session
from .legacy import triage


def notify_team(team: str, summary: str) -> str:
    """Tell a team about a ticket."""
    return f"told the {team} team: {summary}"


def run(session: Session) -> str:
    session.say("Sorting the ticket. ")
    result = triage(session.text, complete=session.complete)  # your existing code, unchanged
    try:
        session.call_tool(
            "notify_team", {"team": result["team"], "summary": session.text[:200]}, notify_team
        )
    except Refused as why:
        session.say(f"(The team was not told: {why}) ")
    return f"{result['team']}: {result['reply']}"
