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

CrewAI is set up to run as the session's when this module is imported, if CrewAI is installed
(before agent.py builds its crew), and by run_crew():

- LLM(model=session.model) takes the provider from the session's model record (its format:
  anthropic-messages is CrewAI's native Anthropic client, openai-chat its OpenAI one), whatever
  the model's name. CrewAI itself routes "anthropic/<name>" natively only for a name it knows as
  Claude's, and any other (oz0 dev's fake model, "fake-model") to LiteLLM, which is not installed.
  Only session.model is routed so: a model string of your own is CrewAI's to route.
- CrewAI's telemetry is off (CREWAI_DISABLE_TELEMETRY): it would send to telemetry.crewai.com.
- run_crew() runs the crew without retries: the gateway's 429 past a limit is final, and CrewAI
  would try again nine times over (each agent's max_retry_limit, and its own retry of a call
  refused with 429).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import inspect
import os
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from .harness import Model, Refused, Session

F = TypeVar("F", bound=Callable[..., Any])


def asked(session: Session, name: str, fn: F) -> F:
    """fn as a tool the job decides: each call is asked first with session.call_tool().

    The returned function has fn's name, docstring and signature, so a framework's tool
    decorator describes it to the model as it would fn. A refused call returns
    "refused: <why>" as the tool's answer, so the model reads why and goes on.

    Frameworks validate a tool's arguments before the call: an argument typed with a pydantic
    model or a dataclass arrives as an instance. The job is asked with its JSON form, and fn gets
    the instance back; an argument a hook changed is made into the parameter's type again
    (with pydantic when it is installed, as LangChain and CrewAI install it).
    """
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def tool(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values: dict[str, Any] = {}
        for param, value in bound.arguments.items():
            kind = signature.parameters[param].kind
            if kind is inspect.Parameter.VAR_KEYWORD:
                values.update(value)
            elif kind is inspect.Parameter.VAR_POSITIONAL:
                if value:
                    raise TypeError(f"{name}: a tool takes named arguments, not *{param}")
            else:
                values[param] = value
        arguments = {key: _jsonable(value) for key, value in values.items()}

        def run(**allowed: Any) -> Any:
            return fn(
                **{key: _typed(fn, key, value, values, arguments) for key, value in allowed.items()}
            )

        try:
            return session.call_tool(name, arguments, run)
        except Refused as why:
            return f"refused: {why}"

    return tool  # type: ignore[return-value]


def _jsonable(value: Any) -> Any:
    """value as JSON can hold it: a pydantic model or a dataclass as its fields, recursively."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _typed(
    fn: Callable[..., Any], key: str, value: Any, values: dict[str, Any], asked: dict[str, Any]
) -> Any:
    """The value fn gets for an allowed argument: the framework's own when the job allowed it as
    asked; else the changed JSON, made into the parameter's type where there is one to make."""
    if key in values and value == asked[key]:
        return values[key]
    try:
        hint = typing.get_type_hints(fn).get(key)
    except Exception:  # an annotation that does not resolve: pass the JSON as it is
        return value
    if hint is None:
        return value
    try:
        pydantic = importlib.import_module("pydantic")
    except ImportError:
        pydantic = None
    if pydantic is not None:
        return pydantic.TypeAdapter(hint).validate_python(value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint) and isinstance(value, Mapping):
        return hint(**value)
    return value


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
    final answer. No retries: a model call the gateway refused (429, past limits.max_steps or a
    budget) ends the run, as a task that fails does."""
    _crewai_on_the_gateway()
    agents = [*(getattr(crew, "agents", None) or []), getattr(crew, "manager_agent", None)]
    for agent in agents:
        if agent is not None:
            agent.max_retry_limit = 0  # CrewAI runs a failed task again, twice by default
    # CrewAI (1.15) retries a call refused with 429 three times, with backoff, unless a retry of
    # its own is already under way: it is told one is.
    try:
        retrying = importlib.import_module("crewai.llms.retry")._active_llm_rate_limit_retry
    except (ImportError, AttributeError):  # a CrewAI without that retry
        retrying = None
    token = retrying.set(True) if retrying is not None else None
    try:
        output = crew.kickoff(inputs={"input": session.text})
    finally:
        if retrying is not None:
            retrying.reset(token)
    raw = getattr(output, "raw", None)
    return raw if isinstance(raw, str) else str(output)


_PROVIDERS = {"anthropic-messages": "anthropic", "openai-chat": "openai"}
"""CrewAI's native provider for each format of a model record."""


def _crewai_on_the_gateway() -> None:
    """Sets CrewAI up to run as the session's when it is installed: its telemetry off, and
    LLM(model=session.model) on the provider of the session's model record."""
    if importlib.util.find_spec("crewai") is None:
        return
    # CrewAI reads it as it loads, and again before each of its telemetry's calls: whether CrewAI
    # or this module loaded first, nothing is sent.
    os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
    llm = importlib.import_module("crewai.llm").LLM
    new = llm.__dict__.get("__new__")
    if getattr(new, "oz0_routes", False):
        return
    routed = new.__func__ if isinstance(new, staticmethod) else new

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
        model, args = (args[0], args[1:]) if args else (kwargs.pop("model", None), args)
        provider = _PROVIDERS.get(model.format_name) if isinstance(model, Model) else None
        if provider and model.name and not kwargs.get("provider"):
            # An explicit provider is CrewAI's native client for it, whatever the model's name.
            model, kwargs["provider"] = model.name, provider
        return routed(cls, model, *args, **kwargs)

    __new__.oz0_routes = True  # type: ignore[attr-defined]
    llm.__new__ = staticmethod(__new__)


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


# Before agent.py builds its crew: LLM(model=session.model) is built there, before run_crew().
_crewai_on_the_gateway()
