"""What the stand-ins of a framework share: the model calls a framework's model client makes,
through the standard library.

The stand-ins in this directory (tests/test_agent.py puts it first on the harness's PYTHONPATH)
have the module paths, class names and signatures of the framework this template was written
against, and drive a tool loop the way it does: they call the model API at the base URL, with the
key and headers the template gives its model client, offer the agent's tools, run the tool calls
the model asks for through the framework's own hook, and stream the model's text. So the template's
wiring is tested without the framework: `uv sync` installs the real one, which
tests/test_framework.py runs.
"""

from __future__ import annotations

import inspect
import json
import os
import typing
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ANTHROPIC = "anthropic-messages"
OPENAI = "openai-chat"

_JSON_TYPES = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}


class ModelHTTPError(Exception):
    """The model API answered an error; status is its HTTP status (429: a limit)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"the model API answered {status}: {message}")
        self.status = status


@dataclass
class Client:
    """A model client as the SDKs build one: the API it speaks, where, with which key and headers.
    Headers from ANTHROPIC_CUSTOM_HEADERS / OPENAI_CUSTOM_HEADERS come first, as the SDKs add
    them, and the client's own win."""

    api: str
    base_url: str
    api_key: str
    headers: dict[str, str] = field(default_factory=dict)
    max_retries: int = 2  # the SDKs' default

    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        env = "ANTHROPIC_CUSTOM_HEADERS" if self.api == ANTHROPIC else "OPENAI_CUSTOM_HEADERS"
        headers: dict[str, str] = {}
        for line in os.environ.get(env, "").split("\n"):
            name, colon, value = line.partition(":")
            if colon:
                headers[name.strip()] = value.strip()
        headers.update(self.headers)
        headers["content-type"] = "application/json"
        if self.api == ANTHROPIC:
            url = self.base_url.rstrip("/") + "/v1/messages"
            headers["x-api-key"] = self.api_key
            headers["anthropic-version"] = "2023-06-01"
        else:
            url = self.base_url.rstrip("/") + "/chat/completions"
            headers["authorization"] = "Bearer " + self.api_key
        data = json.dumps(body).encode("utf-8")
        for attempt in range(self.max_retries + 1):
            request = urllib.request.Request(url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=60) as response:
                    return dict(json.loads(response.read()))
            except urllib.error.HTTPError as err:
                retry = err.code == 429 or err.code >= 500
                if not retry or attempt == self.max_retries:
                    raise ModelHTTPError(err.code, err.read().decode("utf-8", "replace")) from None
        raise AssertionError("unreachable")


@dataclass
class ToolSpec:
    """A tool as a framework offers it to the model."""

    name: str
    description: str
    schema: dict[str, Any]


def tool_spec(fn: Callable[..., Any], name: str | None = None) -> ToolSpec:
    """The spec frameworks make of a function: its name, its docstring's first paragraph, and a
    JSON Schema of its parameters from their annotations (those without a default required)."""
    hints = typing.get_type_hints(fn)
    properties: dict[str, Any] = {}
    required = []
    for param in inspect.signature(fn).parameters.values():
        if param.name in ("self", "cls", "tool_context", "agent"):
            continue
        kind = typing.get_origin(hints.get(param.name)) or hints.get(param.name)
        properties[param.name] = {"type": _JSON_TYPES.get(kind, "string")}  # type: ignore[arg-type]
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
    doc = inspect.getdoc(fn) or ""
    return ToolSpec(
        name or fn.__name__,
        doc.split("\n\n")[0],
        {"type": "object", "properties": properties, "required": required},
    )


@dataclass
class ToolUse:
    """A tool call the model asked for."""

    id: str
    name: str
    arguments: dict[str, Any]


def complete(
    client: Client,
    model: str,
    system: str,
    messages: list[dict[str, Any]],
    tools: list[ToolSpec],
    max_tokens: int,
) -> tuple[str, list[ToolUse], dict[str, Any]]:
    """One model call: returns its text, the tool calls it asks for, and the assistant message
    to append to the conversation."""
    if client.api == ANTHROPIC:
        body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": messages}
        if system:
            body["system"] = system
        if tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.schema}
                for t in tools
            ]
        answer = client.post(body)
        content = answer.get("content") or []
        text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
        uses = [
            ToolUse(b["id"], b["name"], dict(b.get("input") or {}))
            for b in content
            if b.get("type") == "tool_use"
        ]
        return text, uses, {"role": "assistant", "content": content}
    body = {
        "model": model,
        "max_completion_tokens": max_tokens,
        "messages": ([{"role": "system", "content": system}] if system else []) + messages,
    }
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.schema},
            }
            for t in tools
        ]
    answer = client.post(body)
    message = answer["choices"][0]["message"]
    uses = [
        ToolUse(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
        for c in message.get("tool_calls") or []
    ]
    return message.get("content") or "", uses, message


def user_message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def tool_results(api: str, results: list[tuple[ToolUse, str, bool]]) -> list[dict[str, Any]]:
    """The messages that give the model the tools' answers: (call, text, is_error) each."""
    if api == ANTHROPIC:
        return [
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": use.id,
                        "is_error": error,
                        "content": [{"type": "text", "text": text}],
                    }
                    for use, text, error in results
                ],
            }
        ]
    return [{"role": "tool", "tool_call_id": use.id, "content": text} for use, text, _ in results]


def stream(text: str) -> list[str]:
    """A text cut into the deltas a streamed answer would bring."""
    words = text.split(" ")
    return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words) if w or i == 0]
