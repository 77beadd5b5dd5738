"""google.adk.sessions: the in-memory session service."""

from __future__ import annotations

import itertools
from typing import Any

_ids = itertools.count(1)


class Session:
    def __init__(self, id: str, app_name: str, user_id: str, state: dict[str, Any]) -> None:
        self.id = id
        self.app_name = app_name
        self.user_id = user_id
        self.state = state


class InMemorySessionService:
    def __init__(self) -> None:
        self.sessions: dict[str, Session] = {}

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        sid = session_id or f"session-{next(_ids)}"
        self.sessions[sid] = Session(sid, app_name, user_id, dict(state or {}))
        return self.sessions[sid]


__all__ = ["InMemorySessionService", "Session"]
