"""LangGraph and CrewAI as run(session), and asked(): any function as a tool the job decides.

Nothing here imports a framework: add the one you use to pyproject.toml, pinned with ==
(langgraph and langchain-anthropic, or crewai[anthropic]; never litellm or CrewAI's litellm
extra), and call these from agent.py. Their model clients reach the node's LLM proxy through
ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY (or the OPENAI_ pair), which the node sets.

    from langchain_anthropic import ChatAnthropic
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    def run(session):
        lookup = tool(asked(session, "lookup_order", lookup_order))  # asked before every call
        graph = create_react_agent(ChatAnthropic(model=session.model_name), [lookup],
                                   prompt=session.instructions)
        return run_langgraph(session, graph)

List each tool (lookup_order) under harness.tools in the agent definition.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from .harness import Refused, Session

F = TypeVar("F", bound=Callable[..., Any])


def asked(session: Session, name: str, fn: F) -> F:
    """fn as a tool the job decides: each call is asked first with session.call_tool().

    The returned function has fn's name, docstring and signature, so a framework's tool
    decorator describes it to the model as it would fn. A refused call returns
    "refused: <why>" as the tool's answer, so the model reads why and goes on.
    """
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def tool(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments: dict[str, Any] = {}
        for param, value in bound.arguments.items():
            kind = signature.parameters[param].kind
            if kind is inspect.Parameter.VAR_KEYWORD:
                arguments.update(value)
            elif kind is inspect.Parameter.VAR_POSITIONAL:
                if value:
                    raise TypeError(f"{name}: a tool takes named arguments, not *{param}")
            else:
                arguments[param] = value
        try:
            return session.call_tool(name, arguments, fn)
        except Refused as why:
            return f"refused: {why}"

    return tool  # type: ignore[return-value]


def run_langgraph(session: Session, graph: Any, *, config: Mapping[str, Any] | None = None) -> str:
    """Runs a compiled LangGraph graph (a messages graph, such as create_react_agent's) on the
    session's text, and returns the text of its last message."""
    state = graph.invoke(
        {"messages": [{"role": "user", "content": session.text}]},
        config=dict(config) if config else None,
    )
    messages = state.get("messages") if isinstance(state, Mapping) else None
    if not messages:
        return str(state)
    return _text(messages[-1])


def run_crew(session: Session, crew: Any) -> str:
    """Runs a CrewAI crew with the session's text as the {input} of its tasks; returns its
    final answer."""
    output = crew.kickoff(inputs={"input": session.text})
    raw = getattr(output, "raw", None)
    return raw if isinstance(raw, str) else str(output)


def _text(message: Any) -> str:
    """The text of a LangChain message (or a dict): its content, text blocks joined."""
    content = (
        message.get("content")
        if isinstance(message, Mapping)
        else getattr(message, "content", message)
    )
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return str(content)
