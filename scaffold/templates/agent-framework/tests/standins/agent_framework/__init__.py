"""Stand-in of Microsoft Agent Framework (agent-framework-core), with the interfaces the template
uses: see tests/standins/standin_model.py. Agent runs the tool loop as the framework's function
invocation does, through the function middleware."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from standin_model import ModelHTTPError, ToolUse, complete, stream, tool_results, user_message
from standin_model import tool_spec as _spec


class Content:
    def __init__(self, text: str) -> None:
        self.type = "text"
        self.text = text


class FunctionTool:
    def __init__(self, func: Callable[..., Any], name: str | None = None) -> None:
        self.func = func
        self.spec = _spec(func, name)
        self.name = self.spec.name
        self.description = self.spec.description

    async def invoke(self, *, arguments: dict[str, Any]) -> list[Content]:
        value = await asyncio.to_thread(self.func, **arguments)
        return [Content(value if isinstance(value, str) else str(value))]


def tool(func: Callable[..., Any] | None = None, *, name: str | None = None, **kw: Any) -> Any:
    if func is None:
        return lambda fn: FunctionTool(fn, name)
    return FunctionTool(func, name)


class FunctionInvocationContext:
    def __init__(
        self, function: FunctionTool, arguments: dict[str, Any], metadata: dict[str, Any]
    ) -> None:
        self.function = function
        self.arguments = arguments
        self.metadata = metadata
        self.result: Any = None
        self.kwargs: dict[str, Any] = {}


class FunctionMiddleware:
    async def process(
        self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
    ) -> None:
        raise NotImplementedError


class Message:
    def __init__(self, role: str, text: str) -> None:
        self.role = role
        self.text = text


class AgentResponse:
    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages

    @property
    def text(self) -> str:
        return "".join(m.text for m in self.messages)


class AgentResponseUpdate:
    def __init__(self, text: str) -> None:
        self.text = text
        self.role = "assistant"


class ResponseStream:
    def __init__(
        self, updates: AsyncIterator[AgentResponseUpdate], final: Callable[[], AgentResponse]
    ) -> None:
        self._updates = updates
        self._final = final

    def __aiter__(self) -> ResponseStream:
        return self

    async def __anext__(self) -> AgentResponseUpdate:
        return await self._updates.__anext__()

    async def get_final_response(self) -> AgentResponse:
        async for _ in self._updates:
            pass
        return self._final()


class Agent:
    def __init__(
        self,
        client: Any,
        instructions: str | None = None,
        *,
        id: str | None = None,
        name: str | None = None,
        description: str | None = None,
        tools: list[Any] | None = None,
        default_options: dict[str, Any] | None = None,
        context_providers: Any = None,
        middleware: Any = None,
        require_per_service_call_history_persistence: bool = False,
        compaction_strategy: Any = None,
        tokenizer: Any = None,
        additional_properties: Any = None,
    ) -> None:
        self.client = client
        self.instructions = instructions
        self.tools = [t if isinstance(t, FunctionTool) else FunctionTool(t) for t in tools or []]
        self.default_options = dict(default_options or {})
        self.middleware = [m for m in middleware or [] if isinstance(m, FunctionMiddleware)]

    def run(self, messages: str, *, stream: bool = False, **kwargs: Any) -> Any:
        if not stream:
            return self._run_to_end(messages)
        turns: list[Message] = []
        return ResponseStream(self._updates(messages, turns), lambda: AgentResponse(turns))

    async def _run_to_end(self, messages: str) -> AgentResponse:
        turns: list[Message] = []
        async for _ in self._updates(messages, turns):
            pass
        return AgentResponse(turns)

    async def _updates(self, text: str, turns: list[Message]) -> AsyncIterator[AgentResponseUpdate]:
        client = self.client.client.standin
        specs = [t.spec for t in self.tools]
        conversation = [user_message(text)]
        while True:
            try:
                answer, uses, message = await asyncio.to_thread(
                    complete,
                    client,
                    self.client.model or "",
                    self.instructions or "",
                    conversation,
                    specs,
                    int(self.default_options.get("max_tokens", 1024)),
                )
            except ModelHTTPError as err:
                raise RuntimeError(f"<class 'ChatClientException'> {err}") from err
            for delta in stream(answer):
                yield AgentResponseUpdate(delta)
            if answer:
                turns.append(Message("assistant", answer))
            conversation.append(message)
            if not uses:
                return
            results = await asyncio.gather(*(self._invoke(u) for u in uses))
            conversation.extend(tool_results(client.api, list(results)))

    async def _invoke(self, use: ToolUse) -> tuple[ToolUse, str, bool]:
        tool = next((t for t in self.tools if t.name == use.name), None)
        if tool is None:
            return use, f'Error: Requested function "{use.name}" not found.', True
        context = FunctionInvocationContext(tool, dict(use.arguments), {"call_id": use.id})

        async def final() -> None:
            context.result = await tool.invoke(arguments=context.arguments)

        def chain(i: int) -> Callable[[], Awaitable[None]]:
            if i == len(self.middleware):
                return final
            return lambda: self.middleware[i].process(context, chain(i + 1))

        try:
            await chain(0)()
        except Exception:
            return use, "Error: Function failed.", True
        result = context.result
        if isinstance(result, list):
            return use, "\n".join(getattr(c, "text", "") or "" for c in result), False
        return use, "" if result is None else str(result), False


__all__ = [
    "Agent",
    "AgentResponse",
    "AgentResponseUpdate",
    "Content",
    "FunctionInvocationContext",
    "FunctionMiddleware",
    "FunctionTool",
    "Message",
    "ResponseStream",
    "tool",
]
