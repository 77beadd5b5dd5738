"""strands.hooks: the events around a tool call, and the registry hook providers add to."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class HookEvent:
    _writable: tuple[str, ...] = ()

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_ready", False) and name not in self._writable:
            raise AttributeError(f"Property {name} is not writable")
        object.__setattr__(self, name, value)


class BeforeToolCallEvent(HookEvent):
    _writable = ("cancel_tool", "selected_tool", "tool_use")

    def __init__(
        self,
        agent: Any,
        selected_tool: Any,
        tool_use: dict[str, Any],
        invocation_state: dict[str, Any],
    ) -> None:
        self.agent = agent
        self.selected_tool = selected_tool
        self.tool_use = tool_use
        self.invocation_state = invocation_state
        self.cancel_tool: bool | str = False
        self._ready = True


class AfterToolCallEvent(HookEvent):
    _writable = ("result",)

    def __init__(
        self,
        agent: Any,
        selected_tool: Any,
        tool_use: dict[str, Any],
        invocation_state: dict[str, Any],
        result: dict[str, Any],
        exception: Exception | None = None,
        cancel_message: str | None = None,
    ) -> None:
        self.agent = agent
        self.selected_tool = selected_tool
        self.tool_use = tool_use
        self.invocation_state = invocation_state
        self.result = result
        self.exception = exception
        self.cancel_message = cancel_message
        self._ready = True


class HookRegistry:
    def __init__(self) -> None:
        self.callbacks: dict[type, list[Callable[..., Any]]] = {}

    def add_callback(self, event_type: type, callback: Callable[..., Any]) -> None:
        self.callbacks.setdefault(event_type, []).append(callback)


class HookProvider(Protocol):
    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None: ...


__all__ = ["AfterToolCallEvent", "BeforeToolCallEvent", "HookEvent", "HookProvider", "HookRegistry"]
