"""google.genai.types, the parts ADK's events and requests are made of."""

from __future__ import annotations

from typing import Any


class Part:
    def __init__(
        self,
        *,
        text: str | None = None,
        thought: bool | None = None,
        function_call: Any = None,
        function_response: Any = None,
    ) -> None:
        self.text = text
        self.thought = thought
        self.function_call = function_call
        self.function_response = function_response

    @classmethod
    def from_text(cls, *, text: str) -> Part:
        return cls(text=text)


class Content:
    def __init__(self, *, role: str | None = None, parts: list[Part] | None = None) -> None:
        self.role = role
        self.parts = parts or []


class GenerateContentConfig:
    def __init__(
        self, *, system_instruction: Any = None, max_output_tokens: int | None = None, **kwargs: Any
    ) -> None:
        self.system_instruction = system_instruction
        self.max_output_tokens = max_output_tokens
