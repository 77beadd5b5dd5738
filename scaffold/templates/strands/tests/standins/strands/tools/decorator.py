from __future__ import annotations

from collections.abc import Callable
from typing import Any

from standin_model import tool_spec


class DecoratedFunctionTool:
    """strands.tools.decorator.DecoratedFunctionTool: a function the agent may call."""

    def __init__(self, fn: Callable[..., Any], name: str | None = None) -> None:
        self._fn = fn
        self.spec = tool_spec(fn, name)
        self.tool_name = self.spec.name
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fn(*args, **kwargs)


def tool(
    func: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    inputSchema: Any = None,  # Strands' own spelling of the keyword
    context: bool | str = False,
) -> Any:
    """@tool, @tool(...) or tool(fn): a DecoratedFunctionTool."""
    if func is None:
        return lambda fn: DecoratedFunctionTool(fn, name)
    return DecoratedFunctionTool(func, name)
