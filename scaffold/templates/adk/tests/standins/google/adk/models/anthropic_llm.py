"""google.adk.models.anthropic_llm: AnthropicLlm, on the plain Anthropic client (not Vertex)."""

from __future__ import annotations

from typing import Any

from anthropic import AsyncAnthropic

from .base_llm import BaseLlm


class AnthropicLlm(BaseLlm):
    def __init__(
        self,
        *,
        model: str = "claude-sonnet-4-20250514",
        max_tokens: int = 8192,
        client: AsyncAnthropic | None = None,
        **unknown: Any,
    ) -> None:
        if unknown:  # pydantic's extra="ignore": unknown fields are dropped without a word
            pass
        self.model = model
        self.max_tokens = max_tokens
        self.client = client

    @property
    def _anthropic_client(self) -> AsyncAnthropic:
        if self.client is None:
            self.client = AsyncAnthropic()  # from the environment, as ADK builds it
        return self.client
