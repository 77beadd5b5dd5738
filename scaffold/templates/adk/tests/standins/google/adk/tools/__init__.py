"""google.adk.tools: a function as a tool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from standin_model import tool_spec


class BaseTool:
    def __init__(self, *, name: str, description: str) -> None:
        self.name = name
        self.description = description


class FunctionTool(BaseTool):
    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func
        self.spec = tool_spec(func)
        super().__init__(name=self.spec.name, description=self.spec.description)


ToolContext = Any

__all__ = ["BaseTool", "FunctionTool", "ToolContext"]
