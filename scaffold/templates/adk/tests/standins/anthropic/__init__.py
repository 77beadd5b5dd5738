"""Stand-in of the Anthropic SDK's AsyncAnthropic, as google.adk.models.anthropic_llm uses it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from standin_model import ANTHROPIC, Client


class AsyncAnthropic:
    def __init__(
        self,
        *,
        api_key: str | None = None,
        auth_token: str | None = None,
        base_url: str | None = None,
        timeout: Any = None,
        max_retries: int = 2,
        default_headers: Mapping[str, str] | None = None,
        default_query: Any = None,
        http_client: Any = None,
    ) -> None:
        self.standin = Client(
            ANTHROPIC,
            base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
            api_key=api_key or os.environ.get("ANTHROPIC_API_KEY", ""),
            headers=dict(default_headers or {}),
            max_retries=max_retries,
        )
        self.closed = False

    async def close(self) -> None:
        self.closed = True
