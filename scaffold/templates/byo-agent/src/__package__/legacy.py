"""An existing script, the worked example: it has never heard of Orchestrator Zero.

triage() takes the ticket and a `complete` function (a prompt in, the model's text out) and
returns a team and a reply. Anything that calls a model can be wrapped like this: agent.py hands
it session.complete, which goes through the node's LLM proxy with the agent's instructions as the
system prompt.

Try it on its own with a canned model (the ticket is the argument):

    python -m {{.Package}}.legacy "charged twice"
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

TEAMS = ("billing", "technical", "account", "general")
FALLBACK_TEAM = "general"

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)


def build_prompt(ticket: str) -> str:
    return (
        "Sort this support ticket into one of the teams "
        + ", ".join(TEAMS)
        + ', and answer with a JSON object with the keys "team" and "reply".\n\n'
        + "<ticket>\n"
        + ticket.strip()
        + "\n</ticket>"
    )


def triage(text: str, complete: Callable[[str], str]) -> dict[str, str]:
    """Sorts a support ticket: returns {"team": one of TEAMS, "reply": a reply to the customer}."""
    raw = complete(build_prompt(text))
    return parse_answer(raw)


def parse_answer(raw: str) -> dict[str, str]:
    """Reads the model's answer: a JSON object, in a code fence or among prose, or just prose."""
    found = _find_object(raw or "")
    if found is None:
        return {"team": FALLBACK_TEAM, "reply": (raw or "").strip()}
    team = normalise_team(found.get("team"))
    reply = found.get("reply")
    return {"team": team, "reply": "" if reply is None else str(reply).strip()}


def normalise_team(value: Any) -> str:
    """One of TEAMS: "Billing", " billing team " and "BILLING" are all billing."""
    if not isinstance(value, str):
        return FALLBACK_TEAM
    name = value.strip().lower()
    if name in TEAMS:
        return name
    for team in TEAMS:
        if re.search(rf"\b{team}\b", name):
            return team
    return FALLBACK_TEAM


def _find_object(raw: str) -> dict[str, Any] | None:
    """The answer's JSON object: the whole text, a fenced block, or the first object in it
    (one with a "team" key preferred)."""
    candidates = [raw.strip(), *(m.group(1).strip() for m in _FENCE.finditer(raw))]
    for text in candidates:
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    first = None
    for start in (i for i, ch in enumerate(raw) if ch == "{"):
        try:
            value, _ = decoder.raw_decode(raw, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            if "team" in value:
                return value
            if first is None:
                first = value
    return first


def _canned_model(prompt: str) -> str:
    """A stand-in for a model, so the script runs without one."""
    ticket = prompt.rsplit("<ticket>", 1)[-1].lower()
    team = next(
        (
            t
            for t, words in (
                ("billing", ("charge", "refund", "invoice", "pay")),
                ("account", ("password", "login", "sign in", "email")),
                ("technical", ("error", "crash", "bug", "broken")),
            )
            if any(w in ticket for w in words)
        ),
        FALLBACK_TEAM,
    )
    return json.dumps({"team": team, "reply": f"Thanks, the {team} team will look into it."})


if __name__ == "__main__":
    ticket = " ".join(sys.argv[1:]) or sys.stdin.read()
    print(json.dumps(triage(ticket, complete=_canned_model), ensure_ascii=False, indent=2))
