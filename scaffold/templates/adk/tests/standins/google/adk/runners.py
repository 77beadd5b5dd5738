"""google.adk.runners.Runner, standing in: the tool loop as ADK runs an LlmAgent with an
AnthropicLlm (see standin_model.py)."""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import re
from collections.abc import AsyncGenerator
from typing import Any

from google.genai import types
from standin_model import ModelHTTPError, ToolUse, complete, stream, tool_results

from .agents import LlmAgent
from .agents.run_config import RunConfig, StreamingMode
from .models.anthropic_llm import AnthropicLlm
from .models.llm_request import LlmRequest
from .sessions import InMemorySessionService

_STATE = re.compile(r"{+[^{}]*}+")


class Event:
    def __init__(
        self,
        author: str,
        content: types.Content | None,
        partial: bool = False,
        function_calls: bool = False,
    ) -> None:
        self.author = author
        self.content = content
        self.partial = partial
        self._function_calls = function_calls

    def is_final_response(self) -> bool:
        return not self.partial and not self._function_calls


class Context:
    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state


class Runner:
    def __init__(
        self,
        *,
        agent: LlmAgent,
        app_name: str,
        session_service: InMemorySessionService,
        **kwargs: Any,
    ) -> None:
        self.agent = agent
        self.app_name = app_name
        self.session_service = session_service
        self.closed = False

    async def close(self) -> None:
        self.closed = True

    def _system(self, ctx: Context) -> str:
        instruction = self.agent.instruction
        if callable(instruction):
            text = instruction(ctx)
        else:  # ADK fills {name} from the session's state, and fails on one it lacks

            def fill(m: re.Match[str]) -> str:
                key = m.group().strip("{}")
                if key not in ctx.state:
                    raise KeyError(f"Context variable not found: `{key}`.")
                return str(ctx.state[key])

            text = _STATE.sub(fill, instruction)
        return f'{text}\n\nYou are an agent. Your internal name is "{self.agent.name}".'

    async def run_async(
        self,
        *,
        user_id: str,
        session_id: str,
        new_message: types.Content,
        run_config: RunConfig | None = None,
    ) -> AsyncGenerator[Event, None]:
        session = self.session_service.sessions[session_id]
        ctx = Context(session.state)
        llm = self.agent.model
        if not isinstance(llm, AnthropicLlm):
            raise AssertionError("the stand-in runs an AnthropicLlm, as the wiring makes")
        client = llm._anthropic_client.standin
        specs = [t.spec for t in self.agent.tools]
        sse = run_config is not None and run_config.streaming_mode == StreamingMode.SSE
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": "".join(p.text or "" for p in new_message.parts)}
        ]
        while True:
            request = LlmRequest(
                llm.model,
                messages,
                types.GenerateContentConfig(system_instruction=self._system(ctx)),
                specs,
            )
            if self.agent.before_model_callback is not None:
                out = self.agent.before_model_callback(callback_context=ctx, llm_request=request)
                if inspect.isawaitable(out):
                    await out
            try:
                text, uses, message = await asyncio.to_thread(
                    complete,
                    client,
                    request.model,
                    str(request.config.system_instruction or ""),
                    messages,
                    specs,
                    llm.max_tokens,
                )
            except ModelHTTPError:
                raise  # ADK adds no retries of its own
            if sse:
                for delta in stream(text):
                    yield Event(
                        self.agent.name,
                        types.Content(role="model", parts=[types.Part(text=delta)]),
                        partial=True,
                    )
            yield Event(
                self.agent.name,
                types.Content(role="model", parts=[types.Part(text=text)]),
                function_calls=bool(uses),
            )
            messages.append(message)
            if not uses:
                return
            messages.extend(tool_results(client.api, [await self._run(u, ctx) for u in uses]))

    async def _run(self, use: ToolUse, ctx: Context) -> tuple[ToolUse, str, bool]:
        tool = next((t for t in self.agent.tools if t.name == use.name), None)
        args = copy.deepcopy(use.arguments)
        response: Any = None
        if self.agent.before_tool_callback is not None and tool is not None:
            response = self.agent.before_tool_callback(tool=tool, args=args, tool_context=ctx)
            if inspect.isawaitable(response):
                response = await response
        if response is None:
            if tool is None:
                return use, f"Tool '{use.name}' not found.", True
            value = tool.func(**args)
            response = value if isinstance(value, dict) else {"result": value}
        if set(response) == {"result"}:
            result = response["result"]
            text = result if isinstance(result, str) else json.dumps(result)
        else:
            text = json.dumps(response)
        return use, text, False


__all__ = ["Runner"]
