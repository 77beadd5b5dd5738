from __future__ import annotations

from typing import Any

from google.genai import types


class LlmRequest:
    def __init__(
        self, model: str, contents: list[Any], config: types.GenerateContentConfig, tools: list[Any]
    ) -> None:
        self.model = model
        self.contents = contents
        self.config = config
        self.tools = tools
