"""How an ADK agent runs as this plugin's harness: what on_the_gateway() adds to LlmAgent(...),
and run_agent(), which runs it.

- model: ADK's AnthropicLlm on the plain Anthropic client, on the node's gateway with the
  session's key, sending the job's Oz0-Job and Oz0-Agent headers, with no retries (the gateway
  refuses a call past a limit with 429), loading no certificate store for a plain-HTTP gateway
  (harness.gateway_tls). Never a model name string: ADK resolves claude-* to its
  Vertex class and anthropic/* to LiteLLM.
- before_model_callback: ADK adds to an agent's instruction what its features need (sub-agent
  transfer, output schemas, planners), which stays, and a line naming the agent ('You are an
  agent. Your internal name is ...'), which this takes out.
- no instruction: a sub-agent's is its own (LlmAgent(name=..., instruction=...,
  **on_the_gateway(session))), and run_agent() gives the agent it runs the agent's instructions.
- before_tool_callback: every tool call is asked first (functions, FunctionTool instances, MCP and
  other toolsets' tools alike); the arguments the job allowed replace the model's, and ADK runs
  the tool as it always does. A refusal is the tool's answer, "refused: <why>", which the model
  reads and goes on. after_tool_callback and on_tool_error_callback tell the job how it went.
- ADK runs the tool calls of one model turn concurrently: the job is asked about each at once,
  and each runs as soon as it is allowed.
- run_agent(): gives the agent it runs the agent's instructions (prompts/<name>.md) when it has no
  instruction of its own, as a function so that ADK does not fill {placeholders} in them from its
  session state; checks that each toolset (an MCP server's) loads its tools, which ADK would
  otherwise drop with a log line; streams the model's text to session.say() as it comes
  (server-sent events), a sub-agent's under its name; and returns the final answer.

And ADK's own OpenTelemetry spans (invoke_agent, call_llm, execute_tool) go to the node's OTLP
receiver, as children of the job's span: harness.export_spans() sets up the tracer provider ADK's
tracer uses (ADK's own maybe_set_otel_providers() would send metrics and logs to the node too,
which it does not take).
"""

from __future__ import annotations

import asyncio
import os
import re
from typing import Any

from anthropic import AsyncAnthropic, DefaultAsyncHttpxClient
from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.run_config import (
    RunConfig,
    StreamingMode,  # pyright: ignore[reportPrivateImportUsage]  (ADK's documented import)
)
from google.adk.models.anthropic_llm import AnthropicLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from .harness import Refused, Session, ToolCall, export_spans, gateway_tls

MAX_TOKENS = 8192
"""The most tokens one model answer may take."""

NOT_ASKED = frozenset({"transfer_to_agent", "set_model_response"})
"""ADK's own tools for handing over to a sub-agent and giving a structured answer: they run
nothing outside the agent, so there is nothing for the job to decide."""


def on_the_gateway(session: Session) -> dict[str, Any]:
    """The LlmAgent(...) arguments that run an ADK agent as the session's."""
    export_spans()
    asking = AskTheJob(session)
    return {
        "model": model(session),
        "before_model_callback": without_the_name_line,
        "before_tool_callback": asking.before_tool,
        "after_tool_callback": asking.after_tool,
        "on_tool_error_callback": asking.on_tool_error,
    }


def model(session: Session) -> AnthropicLlm:
    """ADK's model for the session's model record, on the node's gateway."""
    base_url = os.environ["ANTHROPIC_BASE_URL"]
    client = AsyncAnthropic(
        base_url=base_url,
        api_key=os.environ["ANTHROPIC_API_KEY"],
        default_headers={"Oz0-Job": session.job, "Oz0-Agent": session.agent},
        max_retries=0,
        http_client=DefaultAsyncHttpxClient(verify=gateway_tls(base_url)),
    )
    return AnthropicLlm(model=session.model_name, max_tokens=MAX_TOKENS, client=client)


def without_the_name_line(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
    """A before_model_callback that takes out of the system prompt the line ADK adds to name the
    agent, and only that: what ADK adds for its features stays."""
    config = llm_request.config
    if config is None or not isinstance(config.system_instruction, str):
        return None
    name = re.escape(callback_context.agent_name)
    # ADK appends it after the instructions, a blank line between (llm_request.append_instructions).
    line = (
        rf'(?:\n\n)?You are an agent\. Your internal name is "{name}"\.'
        r'(?: The description about you is ".*?"\.)?(?=\n|$)'
    )
    config.system_instruction = re.sub(line, "", config.system_instruction, count=1, flags=re.S)
    return None


class AskTheJob:
    """The tool callbacks: each call asked before ADK runs it, its outcome told after."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.calls: dict[str, ToolCall] = {}  # by ADK's function call id, while the tool runs

    async def before_tool(
        self, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        if tool.name in NOT_ASKED:
            return None
        try:
            # Asking waits for the job (a person, maybe): off the event loop.
            call = await asyncio.to_thread(self.session.ask, tool.name, dict(args))
        except Refused as why:
            return {"result": f"refused: {why}"}  # the tool's answer: ADK does not run it
        # ADK runs the tool with this very dict: the job's arguments replace the model's.
        args.clear()
        args.update(call.arguments)
        if tool_context.function_call_id:
            self.calls[tool_context.function_call_id] = call
        return None

    async def after_tool(
        self, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, tool_response: Any
    ) -> None:
        call = self.calls.pop(tool_context.function_call_id or "", None)
        if call is None:  # refused, or not asked
            return None
        failure = _failure(tool_response)
        if failure is not None:
            call.failed(failure)
        elif isinstance(tool_response, dict) and tool_response.keys() == {"result"}:
            call.done(tool_response["result"])  # ADK's wrapper of a value that is not a dict
        else:
            call.done(tool_response)
        return None

    async def on_tool_error(
        self, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, error: Exception
    ) -> None:
        call = self.calls.pop(tool_context.function_call_id or "", None)
        if call is not None:
            call.failed(error)
        return None  # ADK goes on as it does without the callback: the error ends the run


def _failure(response: Any) -> str | None:
    """Why a tool's answer is a failure, or None: ADK answers {"error": why} when it could not
    call a function (a missing argument, say), and an MCP tool's result says isError."""
    if not isinstance(response, dict):
        return None
    if response.keys() == {"error"}:
        return str(response["error"])
    if response.get("isError") is True:
        content = response.get("content")
        texts = [str(c.get("text", "")) for c in content or [] if isinstance(c, dict)]
        return "\n".join(texts) or "the MCP tool failed"
    return None


def run_agent(session: Session, agent: LlmAgent) -> str:
    """Runs the agent on the job's input; its text streams to the job; returns its answer.

    Its instruction, when it has none of its own, is the agent's instructions (prompts/<name>.md);
    its sub-agents keep theirs."""
    if not agent.instruction:
        agent.instruction = lambda context: session.instructions
    return asyncio.run(_run(session, agent))


async def _run(session: Session, agent: LlmAgent) -> str:
    runner = Runner(agent=agent, app_name="oz0", session_service=InMemorySessionService())
    adk_session = await runner.session_service.create_session(app_name="oz0", user_id=session.job)
    message = types.Content(role="user", parts=[types.Part(text=session.text)])
    answer = ""
    try:
        await _load_toolsets(agent)
        async for event in runner.run_async(
            user_id=session.job,
            session_id=adk_session.id,
            new_message=message,
            run_config=RunConfig(streaming_mode=StreamingMode.SSE),
        ):
            parts = (event.content.parts if event.content else None) or []
            text = "".join(p.text for p in parts if p.text and not p.thought)
            if event.partial:
                if text:
                    # A sub-agent's text is said under its name (the live view shows the job's).
                    session.say(text, by=None if event.author == agent.name else event.author)
            elif event.is_final_response() and text:
                answer = text
    finally:
        await runner.close()  # closes the agent's toolsets too (an MCP server's process)
        await _close_clients(agent)
    return answer


async def _load_toolsets(agent: Any) -> None:
    """Loads the tools of each toolset of the agent and its sub-agents (an MCP server's: it
    starts the server), so that one that cannot load fails the session, saying why: ADK itself
    runs the agent without them, with a log line, and the model never knows they were meant to
    be there. The tools are kept (ADK's toolsets cache them) for the run."""
    for tool in getattr(agent, "tools", None) or []:
        if not isinstance(tool, BaseToolset):
            continue
        try:
            await tool.get_tools_with_prefix(None)
        except Exception as err:
            raise ToolsetError(
                f"agent {agent.name}: its {type(tool).__name__}{_server(tool)} could not load its "
                f"tools: {type(err).__name__}: {err}"
            ) from err
    for sub in getattr(agent, "sub_agents", None) or []:
        await _load_toolsets(sub)


class ToolsetError(Exception):
    """A toolset of the agent's (an MCP server's) could not load its tools."""


def _server(toolset: BaseToolset) -> str:
    """The MCP server a toolset starts, as the job's error names it: " (`command args`)"."""
    params = getattr(toolset, "connection_params", None)
    server = getattr(params, "server_params", params)
    command = getattr(server, "command", None)
    if not isinstance(command, str):
        return ""
    args = [str(a) for a in getattr(server, "args", None) or []]
    return f" (`{' '.join([command, *args])}`)"


async def _close_clients(agent: Any) -> None:
    """Closes the Anthropic clients of the agent and its sub-agents."""
    model = getattr(agent, "model", None)
    if isinstance(model, AnthropicLlm) and model.client is not None:
        await model.client.close()
    for sub in getattr(agent, "sub_agents", None) or []:
        await _close_clients(sub)
