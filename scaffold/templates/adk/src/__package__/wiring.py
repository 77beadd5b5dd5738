"""How an ADK agent runs as this plugin's harness: what on_the_gateway() adds to LlmAgent(...),
and run_agent(), which runs it.

- model: ADK's AnthropicLlm on the plain Anthropic client, on the node's gateway with the
  session's key, sending the job's Oz0-Job and Oz0-Agent headers, with no retries (the gateway
  refuses a call past a limit with 429). Never a model name string: ADK resolves claude-* to its
  Vertex class and anthropic/* to LiteLLM.
- instruction: the agent's instructions (prompts/<name>.md), given as a function so that ADK does
  not fill {placeholders} in them from its session state, and set as the whole system prompt
  (ADK adds a line of its own otherwise).
- before_tool_callback: every tool call is asked first and runs with the arguments the job
  allowed; a refusal is returned as the tool's answer, "refused: <why>", which the model reads and
  goes on.
- run_agent(): streams the model's text to session.say() as it comes (server-sent events) and
  returns the final answer.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

from anthropic import AsyncAnthropic
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.models.anthropic_llm import AnthropicLlm
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

from .harness import Refused, Session

MAX_TOKENS = 8192
"""The most tokens one model answer may take."""


def on_the_gateway(session: Session, tools: list[Callable[..., Any]]) -> dict[str, Any]:
    """The LlmAgent(...) arguments that run an ADK agent as the session's."""
    return {
        "model": model(session),
        "instruction": lambda context: session.instructions,
        "before_model_callback": exact_instructions(session),
        "before_tool_callback": ask_the_job(session, tools),
    }


def model(session: Session) -> AnthropicLlm:
    """ADK's model for the session's model record, on the node's gateway."""
    client = AsyncAnthropic(
        base_url=os.environ["ANTHROPIC_BASE_URL"],
        api_key=os.environ["ANTHROPIC_API_KEY"],
        default_headers={"Oz0-Job": session.job, "Oz0-Agent": session.agent},
        max_retries=0,
    )
    return AnthropicLlm(model=session.model_name, max_tokens=MAX_TOKENS, client=client)


def exact_instructions(session: Session) -> Callable[..., None]:
    """A before_model_callback that makes the system prompt the agent's instructions alone."""

    def before_model_callback(callback_context: Any, llm_request: Any) -> None:
        llm_request.config.system_instruction = session.instructions

    return before_model_callback


def ask_the_job(session: Session, tools: list[Callable[..., Any]]) -> Callable[..., Any]:
    """A before_tool_callback that asks the job before each tool call and runs it with the
    arguments the job allowed; its answer is the tool's, so ADK does not run it again."""
    functions = {fn.__name__: fn for fn in tools}

    async def before_tool_callback(
        tool: Any, args: dict[str, Any], tool_context: Any
    ) -> dict[str, Any]:
        fn = functions.get(tool.name)
        if fn is None:
            return {"result": f"refused: {tool.name} is not one of this agent's tools"}
        try:
            # Asking waits for the job (a person, maybe): off the event loop.
            result = await asyncio.to_thread(session.call_tool, tool.name, dict(args), fn)
        except Refused as why:
            return {"result": f"refused: {why}"}
        except Exception as err:  # the tool failed: the model reads why (the job shows it too)
            return {"error": f"{type(err).__name__}: {err}"}
        return {"result": result}

    return before_tool_callback


def run_agent(session: Session, agent: LlmAgent) -> str:
    """Runs the agent on the job's input; its text streams to the job; returns its answer."""
    return asyncio.run(_run(session, agent))


async def _run(session: Session, agent: LlmAgent) -> str:
    runner = Runner(agent=agent, app_name="oz0", session_service=InMemorySessionService())
    adk_session = await runner.session_service.create_session(app_name="oz0", user_id=session.job)
    message = types.Content(role="user", parts=[types.Part(text=session.text)])
    answer = ""
    try:
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
                    session.say(text)
            elif event.is_final_response() and text:
                answer = text
    finally:
        await runner.close()
        if isinstance(agent.model, AnthropicLlm) and agent.model.client is not None:
            await agent.model.client.close()
    return answer
