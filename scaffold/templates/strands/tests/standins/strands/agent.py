"""strands.agent.Agent, standing in: the tool loop as Strands runs it (see standin_model.py)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import sys
import typing
from typing import Any

from standin_model import ModelHTTPError, ToolUse, complete, stream, tool_results, user_message

from .hooks import AfterToolCallEvent, BeforeToolCallEvent, HookRegistry
from .tools.decorator import DecoratedFunctionTool
from .types.exceptions import EventLoopException, ModelThrottledException

_DEFAULT: Any = object()
MAX_ATTEMPTS = 6  # ModelRetryStrategy's default


class AgentResult:
    def __init__(self, stop_reason: str, message: dict[str, Any]) -> None:
        self.stop_reason = stop_reason
        self.message = message
        self.metrics: dict[str, Any] = {}
        self.state: dict[str, Any] = {}

    def __str__(self) -> str:
        return "".join(b["text"] + "\n" for b in self.message["content"] if "text" in b)


def _print_events(**event: Any) -> None:
    """Strands' PrintingCallbackHandler: the default, which prints to stdout."""
    if "data" in event:
        print(event["data"], end="")


class Agent:
    def __init__(
        self,
        model: Any = None,
        messages: list[Any] | None = None,
        tools: list[Any] | None = None,
        system_prompt: str | None = None,
        structured_output_model: Any = None,
        callback_handler: Any = _DEFAULT,
        conversation_manager: Any = None,
        record_direct_tool_call: bool = True,
        load_tools_from_directory: bool = False,
        trace_attributes: Any = None,
        *,
        agent_id: str | None = None,
        name: str | None = None,
        description: str | None = None,
        state: Any = None,
        plugins: Any = None,
        hooks: list[Any] | None = None,
        session_manager: Any = None,
        structured_output_prompt: str | None = None,
        tool_executor: Any = None,
        retry_strategy: Any = _DEFAULT,
        concurrent_invocation_mode: Any = None,
    ) -> None:
        if model is None or isinstance(model, str):
            raise AssertionError(
                "Agent(model=None or a string) is Strands' BedrockModel, on AWS, "
                "not the gateway: pass a model instance"
            )
        self.model = model
        self.system_prompt = system_prompt
        self.tools: dict[str, DecoratedFunctionTool] = {}
        for t in tools or []:
            if isinstance(t, DecoratedFunctionTool):
                self.tools[t.tool_name] = t
            else:  # as Strands does: a warning in the log, and the tool is not there
                print(f"tool=<{t}> | unrecognized tool specification", file=sys.stderr)
        self.callback_handler = (
            _print_events
            if callback_handler is _DEFAULT
            else (callback_handler or (lambda **event: None))
        )
        self.attempts = MAX_ATTEMPTS if retry_strategy is _DEFAULT else 1
        self.hooks = HookRegistry()
        for hook in hooks or []:
            if hasattr(hook, "register_hooks"):
                hook.register_hooks(self.hooks)
            else:
                first = next(iter(inspect.signature(hook).parameters.values()))
                self.hooks.add_callback(typing.get_type_hints(hook)[first.name], hook)
        self.messages: list[dict[str, Any]] = []

    def __call__(self, prompt: str, **kwargs: Any) -> AgentResult:
        # As Strands does: asyncio.run in a thread of its own.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, self.invoke_async(prompt)).result()

    async def invoke_async(self, prompt: str, **kwargs: Any) -> AgentResult:
        client = self.model.client
        specs = [t.spec for t in self.tools.values()]
        self.messages.append(user_message(prompt))
        cycle = 0
        while True:
            cycle += 1
            try:
                text, uses, message = await self._model_call(specs)
            except ModelThrottledException as err:
                if cycle > 1:
                    raise EventLoopException(err) from err
                raise
            for delta in stream(text):
                self.callback_handler(data=delta, delta={"text": delta})
            self.messages.append(message)
            if not uses:
                result = AgentResult("end_turn", {"role": "assistant", "content": [{"text": text}]})
                self.callback_handler(result=result)
                return result
            results = [await self._run_tool(use) for use in uses]
            self.messages.extend(tool_results(client.api, results))

    async def _model_call(self, specs: list[Any]) -> tuple[str, list[ToolUse], dict[str, Any]]:
        for attempt in range(1, self.attempts + 1):
            try:
                return await asyncio.to_thread(
                    complete,
                    self.model.client,
                    self.model.config["model_id"],
                    self.system_prompt or "",
                    self.messages,
                    specs,
                    self.model.max_tokens(),
                )
            except ModelHTTPError as err:
                if err.status != 429:
                    raise
                if attempt == self.attempts:
                    raise ModelThrottledException(str(err)) from err
        raise AssertionError("unreachable")

    async def _invoke(self, event: Any) -> None:
        for callback in self.hooks.callbacks.get(type(event), []):
            out = callback(event)
            if inspect.isawaitable(out):
                await out

    async def _run_tool(self, use: ToolUse) -> tuple[ToolUse, str, bool]:
        tool_use = {"toolUseId": use.id, "name": use.name, "input": use.arguments}
        selected = self.tools.get(use.name)
        before = BeforeToolCallEvent(self, selected, tool_use, {})
        await self._invoke(before)
        cancel: str | None = None
        exception: Exception | None = None
        if before.cancel_tool:
            cancel = (
                before.cancel_tool
                if isinstance(before.cancel_tool, str)
                else "tool cancelled by user"
            )
            result = {"toolUseId": use.id, "status": "error", "content": [{"text": cancel}]}
        elif selected is None:
            result = {
                "toolUseId": use.id,
                "status": "error",
                "content": [{"text": f"Unknown tool: {use.name}"}],
            }
        else:
            try:
                value = await asyncio.to_thread(selected, **before.tool_use["input"])
                result = {
                    "toolUseId": use.id,
                    "status": "success",
                    "content": [{"text": value if isinstance(value, str) else str(value)}],
                }
            except Exception as err:  # as Strands does: the error is the tool's answer
                exception = err
                result = {
                    "toolUseId": use.id,
                    "status": "error",
                    "content": [{"text": f"Error: {type(err).__name__} - {err}"}],
                }
        after = AfterToolCallEvent(self, selected, before.tool_use, {}, result, exception, cancel)
        await self._invoke(after)
        text = "".join(c.get("text", "") for c in after.result["content"])
        return use, text, after.result["status"] == "error"
