"""Stand-in of the OpenAI SDK's AsyncOpenAI, as agent_framework.openai uses it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from standin_model import OPENAI, Client


class AsyncOpenAI:
    def __init__(
        self,
        *,
        api_key: str | None = None,
        organization: str | None = None,
        project: str | None = None,
        base_url: str | None = None,
        timeout: Any = None,
        max_retries: int = 2,
        default_headers: Mapping[str, str] | None = None,
        default_query: Any = None,
        http_client: Any = None,
    ) -> None:
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise RuntimeError("The api_key client option must be set")
        self.standin = Client(
            OPENAI,
            base_url=base_url or os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
            api_key=key,
            headers=dict(default_headers or {}),
            max_retries=max_retries,
        )
        self.closed = False

    async def close(self) -> None:
        self.closed = True
