"""How an Agent Framework agent runs as this plugin's harness: what on_the_gateway() adds to
Agent(...), and run_agent(), which runs it.

- client: the framework's Chat Completions client (OpenAIChatCompletionClient: its
  OpenAIChatClient speaks the Responses API, which the gateway does not serve) on an OpenAI client
  of the node's gateway with the session's key, sending the job's Oz0-Job and Oz0-Agent headers,
  with no retries (the gateway refuses a call past a limit with 429).
- middleware: every tool call is asked first and runs with the arguments the job allowed; a
  refusal is set as the tool's result, "refused: <why>", without running it, and the model reads
  it and goes on. Middleware of your own goes in on_the_gateway(session, middleware=[...]): the
  framework sorts it (agent, chat, function) and runs each kind in the list's order, the job's
  ask last of the function middleware, so the job is asked what the tool will run with. MCP
  tools (MCPStdioTool and the others) are functions like the agent's own: asked the same way.
- run_agent(): runs the agent in an AgentSession of its own (a tool's FunctionInvocationContext
  has it: ctx.session.state), streams the model's text to session.say() as it comes and returns
  the final answer; the agent's MCP servers run while it does, and stop before it returns. One
  that cannot start fails the session, saying which.

And the framework's own OpenTelemetry spans (invoke_agent, chat, execute_tool) go to the node's
OTLP receiver, as children of the job's span: its instrumentation is enabled, on the tracer
provider harness.export_spans() sets up (the framework's configure_otel_providers() would send
metrics and logs to the node too, which it does not take).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from agent_framework import Agent, FunctionInvocationContext, FunctionMiddleware, MiddlewareTypes
from agent_framework.observability import enable_instrumentation
from agent_framework.openai import OpenAIChatCompletionClient
from openai import AsyncOpenAI, DefaultAsyncHttpxClient

from .harness import Refused, Session, export_spans, gateway_tls

MAX_TOKENS = 8192
"""The most tokens one model answer may take."""


def on_the_gateway(session: Session, middleware: Sequence[MiddlewareTypes] = ()) -> dict[str, Any]:
    """The Agent(...) arguments that run an Agent Framework agent as the session's; middleware
    is yours, which runs before the job is asked."""
    if export_spans():
        enable_instrumentation()
    return {
        "client": client(session),
        "middleware": [*middleware, AskTheJob(session)],
        "default_options": {"max_tokens": MAX_TOKENS},
    }


def client(session: Session) -> OpenAIChatCompletionClient:
    """The framework's chat client for the session's model record, on the node's gateway."""
    base_url = os.environ["OPENAI_BASE_URL"]
    openai = AsyncOpenAI(
        base_url=base_url,
        api_key=os.environ["OPENAI_API_KEY"],
        default_headers={"Oz0-Job": session.job, "Oz0-Agent": session.agent},
        max_retries=0,
        http_client=DefaultAsyncHttpxClient(verify=gateway_tls(base_url)),
    )
    return OpenAIChatCompletionClient(model=session.model_name, async_client=openai)


class AskTheJob(FunctionMiddleware):
    """Function middleware: every tool call is asked first, its answer shown in the job."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session

    async def process(
        self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
    ) -> None:
        try:
            # Asking waits for the job (a person, maybe): off the event loop.
            call = await asyncio.to_thread(
                self.session.ask, context.function.name, dict(context.arguments)
            )
        except Refused as why:
            context.result = f"refused: {why}"  # the tool does not run; the model reads this
            return
        context.arguments = call.arguments
        try:
            await call_next()
        except Exception as err:
            call.failed(err)
            raise
        call.done(text_of(context.result))


def text_of(result: Any) -> str:
    """A tool's result as the framework holds it (a list of contents), as text."""
    if isinstance(result, list):
        return "\n".join(str(getattr(c, "text", "") or "") for c in result)
    return "" if result is None else str(result)


def run_agent(session: Session, agent: Agent) -> str:
    """Runs the agent on the job's input; its text streams to the job; returns its answer."""
    return asyncio.run(_run(session, agent))


async def _run(session: Session, agent: Agent) -> str:
    try:
        # The agent's MCP tools connect for the run and close on this loop when it ends.
        async with _opened(agent):
            # In a session, as the framework's own hosts run an agent: tools that take the
            # FunctionInvocationContext keep what they know in ctx.session.state.
            stream = agent.run(session.text, stream=True, session=agent.create_session())
            async for update in stream:
                if update.text:
                    session.say(update.text)
            final = await stream.get_final_response()
    finally:
        # The OpenAI client is closed on the loop it ran on (not at exit, in noise on stderr).
        openai = getattr(getattr(agent, "client", None), "client", None)
        if isinstance(openai, AsyncOpenAI):
            await openai.close()
    answers = [m.text for m in final.messages if m.role == "assistant" and m.text]
    return answers[-1] if answers else final.text


class MCPServerError(Exception):
    """An MCP server of the agent's could not start."""


@contextlib.asynccontextmanager
async def _opened(agent: Agent) -> AsyncIterator[Agent]:
    """async with agent, whose MCP servers start as it opens: one that cannot start fails the
    session, saying which (the framework's own error says only "Connection closed")."""
    try:
        await agent.open()
    except Exception as err:
        down = [tool for tool in agent.mcp_tools if not tool.is_connected]
        servers = ", ".join(f"{tool.name}{_command(tool)}" for tool in down) or "one"
        who = f"agent {agent.name}" if agent.name else "the agent"
        raise MCPServerError(
            f"{who}: its MCP server {servers} could not start: {type(err).__name__}: {err}"
        ) from err
    try:
        yield agent
    finally:
        await agent.close()


def _command(tool: Any) -> str:
    """The command that starts an MCP server over stdio, as an error names it: " (`python x`)"."""
    command = getattr(tool, "command", None)
    if not isinstance(command, str):
        return ""
    args = [str(a) for a in getattr(tool, "args", None) or []]
    return f" (`{' '.join([command, *args])}`)"
