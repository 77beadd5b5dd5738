"""How a Strands agent runs as this plugin's harness: what on_the_gateway() adds to Agent(...).

- model: Strands' Anthropic or OpenAI (Chat Completions) model, in the session's format, on the
  node's gateway with the session's key, sending the job's Oz0-Job and Oz0-Agent headers; never
  Agent's default (Bedrock, on AWS).
- hooks: every tool call is asked first (BeforeToolCallEvent): it runs with the arguments the job
  allowed, and a refusal cancels it with "refused: <why>" as its answer, which the model reads and
  goes on; the tool's result is shown in the job (AfterToolCallEvent).
- callback_handler: the model's text goes to session.say() as it streams (Strands' default handler
  would print it to stdout, which is the protocol's); a second agent's (an agent given to another
  as a tool, built with on_the_gateway() too) under its name.
- retry_strategy and max_retries: none. The gateway refuses a call past a limit with 429, and
  retrying it only spends time (Strands retries a 429 six times by default, its SDK clients twice).
- tool_executor: one tool call at a time, so that each is asked in the model's order.

And Strands' own OpenTelemetry spans (the agent loop, each model call, each tool) go to the node's
OTLP receiver (StrandsTelemetry's OTLP exporter, on the OTEL_EXPORTER_OTLP_* variables the node
sets), as children of the job's span (TRACEPARENT, which harness.py makes the current context):
the job's timeline and your OpenTelemetry backend show them under the job.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from typing import Any

from strands.hooks import (
    AfterToolCallEvent,
    BeforeInvocationEvent,
    BeforeToolCallEvent,
    HookRegistry,
)
from strands.tools.executors import SequentialToolExecutor

from .harness import Refused, Session, ToolCall, gateway_tls

MAX_TOKENS = 8192
"""The most tokens one model answer may take."""


def on_the_gateway(session: Session) -> dict[str, Any]:
    """The Agent(...) arguments that run a Strands agent as the session's."""
    traced()
    return {
        "model": model(session),
        "hooks": [AskTheJob(session)],
        "callback_handler": streamed_to(session),
        "retry_strategy": None,
        "tool_executor": SequentialToolExecutor(),
    }


_telemetry: Any = None


def traced() -> None:
    """Turns Strands' tracing on, once, when the node receives spans (OTEL_EXPORTER_OTLP_ENDPOINT):
    its spans are exported in batches and flushed as the session exits."""
    global _telemetry
    if _telemetry is None and os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        from strands.telemetry import StrandsTelemetry

        _telemetry = StrandsTelemetry().setup_otlp_exporter()


def model(session: Session) -> Any:
    """Strands' model for the session's model record, on the node's gateway."""
    headers = {"Oz0-Job": session.job, "Oz0-Agent": session.agent}
    if session.model.format_name == "openai-chat":
        from strands.models.openai import OpenAIModel

        return OpenAIModel(
            client_args={
                "base_url": os.environ["OPENAI_BASE_URL"],
                "api_key": os.environ["OPENAI_API_KEY"],
                "default_headers": headers,
                "max_retries": 0,
            },
            model_id=session.model_name,
            # Copied into the request as it is: max_tokens, which OpenAI refuses for its
            # reasoning models, is max_completion_tokens on Chat Completions.
            params={"max_completion_tokens": MAX_TOKENS},
        )
    from anthropic import DefaultAsyncHttpxClient
    from strands.models.anthropic import AnthropicModel

    base_url = os.environ["ANTHROPIC_BASE_URL"]
    return AnthropicModel(
        client_args={
            "base_url": base_url,
            "api_key": os.environ["ANTHROPIC_API_KEY"],
            "default_headers": headers,
            "max_retries": 0,
            "http_client": DefaultAsyncHttpxClient(verify=gateway_tls(base_url)),
        },
        model_id=session.model_name,
        max_tokens=MAX_TOKENS,
    )


class AskTheJob:
    """A Strands hook provider: every tool call is asked first, its answer shown in the job."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.calls: dict[str, ToolCall] = {}

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeInvocationEvent, self.invoked)
        registry.add_callback(BeforeToolCallEvent, self.before)
        registry.add_callback(AfterToolCallEvent, self.after)

    def invoked(self, event: BeforeInvocationEvent) -> None:
        # The first agent the session runs is its own (agent.py's); any other runs inside it, as
        # its tool, and its text is said under its name.
        _main_agent.setdefault(self.session, event.agent)

    async def before(self, event: BeforeToolCallEvent) -> None:
        use = event.tool_use
        try:
            # Asking waits for the job (a person, maybe): off the event loop.
            call = await asyncio.to_thread(self.session.ask, use["name"], use.get("input") or {})
        except Refused as why:
            event.cancel_tool = f"refused: {why}"
            return
        self.calls[use["toolUseId"]] = call
        # A new dict: the old one is the model's own message in the conversation.
        event.tool_use = {**use, "input": call.arguments}

    def after(self, event: AfterToolCallEvent) -> None:
        call = self.calls.pop(event.tool_use["toolUseId"], None)
        if call is None:
            if event.cancel_message:  # refused: the model reads it as an answer, not an error
                event.result = {**event.result, "status": "success"}
            return
        text = "".join(str(c.get("text", "")) for c in event.result.get("content", []))
        if event.result.get("status") == "error":
            call.failed(text)
        else:
            call.done(text)


_main_agent: weakref.WeakKeyDictionary[Session, Any] = weakref.WeakKeyDictionary()
"""The agent each session runs first, its own: the one agent.py calls."""


def streamed_to(session: Session) -> Any:
    """A Strands callback handler that streams the model's text to the job: the session's own
    agent's as it is, another's under its name."""

    def on_event(**event: Any) -> None:
        text = event.get("data")
        if isinstance(text, str) and text:
            agent = event.get("agent")
            main = _main_agent.get(session)
            ours = agent is None or main is None or agent is main
            session.say(text, by=None if ours else str(getattr(agent, "name", "") or "agent"))

    return on_event


def text_of(result: Any) -> str:
    """The text of an AgentResult's last message."""
    return "".join(b["text"] for b in result.message.get("content", []) if "text" in b)
