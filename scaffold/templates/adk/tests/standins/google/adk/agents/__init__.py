"""google.adk.agents: LlmAgent (also Agent)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..models.base_llm import BaseLlm
from ..tools import FunctionTool


class LlmAgent:
    def __init__(
        self,
        *,
        name: str,
        model: str | BaseLlm = "",
        instruction: Any = "",
        description: str = "",
        tools: list[Any] | None = None,
        generate_content_config: Any = None,
        before_model_callback: Callable[..., Any] | None = None,
        after_model_callback: Callable[..., Any] | None = None,
        before_tool_callback: Callable[..., Any] | None = None,
        after_tool_callback: Callable[..., Any] | None = None,
        **fields: Any,
    ) -> None:
        if not name.isidentifier() or name == "user":
            raise ValueError(f"Found invalid agent name: `{name}`")
        if not isinstance(model, BaseLlm):
            raise AssertionError(
                f"model={model!r} resolves through ADK's registry: claude-* to "
                "the Vertex Claude class, anthropic/* to LiteLLM; pass an "
                "AnthropicLlm instance"
            )
        self.name = name
        self.model = model
        self.instruction = instruction
        self.description = description
        self.tools = [t if isinstance(t, FunctionTool) else FunctionTool(t) for t in tools or []]
        self.generate_content_config = generate_content_config
        self.before_model_callback = before_model_callback
        self.before_tool_callback = before_tool_callback
        self.after_tool_callback = after_tool_callback


Agent = LlmAgent

__all__ = ["Agent", "LlmAgent"]
