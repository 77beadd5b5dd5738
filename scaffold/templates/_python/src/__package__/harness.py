"""The harness side of the oz0 harness protocol, version 1.

One process per job. The node starts the harness's command,

    python -m {{.Package}}

writes the session request as the first line of stdin and reads events from stdout, one JSON
object per line:

    node -> harness (stdin)   {"type": "session", "protocol": 1, ...}     the first line
                              {"type": "permission", "id": "p1", "decision": "allow", ...}
    harness -> node (stdout)  say, log, permission_request, tool_result, and last of all
                              exactly one result or error

stdout carries the protocol and nothing else: main() moves file descriptor 1 to stderr before your
code runs, so a stray print(), a library's progress bar or a C extension's output lands in the
job's log (stderr) instead of corrupting the protocol. stdin is the node's too: your code reads
/dev/null from it.

You should not need to edit this file: your agent is run(session) in agent.py.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import signal
import ssl
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NoReturn

PROTOCOLS = (1,)
"""The protocol versions this harness speaks."""

MAX_LINE = 8 * 1024 * 1024
"""The longest line the protocol allows, in bytes."""

MODEL_TIMEOUT_S = 600.0
"""How long one model call may take."""

ANTHROPIC_VERSION = "2023-06-01"

EXIT_GRACE_S = 2.0
"""How long atexit handlers get after the last line before the process exits regardless."""

__all__ = [
    "PROTOCOLS",
    "Model",
    "ModelError",
    "ProtocolError",
    "Refused",
    "Session",
    "StepLimitExceeded",
    "ToolCall",
    "main",
]


class Refused(Exception):
    """The job refused a tool call: a hook, the default-deny policy or a person said no."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


class ModelError(Exception):
    """A model call failed: the gateway or the provider answered with an error, or no answer."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class StepLimitExceeded(ModelError):
    """The session has made limits.max_steps model calls; the call was not made."""


class ProtocolError(Exception):
    """The node sent something this harness cannot work with."""


class Model(str):
    """The session's model.

    Its string value is what LiteLLM-style clients such as CrewAI's LLM(model=...) expect:
    "anthropic/<name>" for the anthropic-messages format, "openai/<name>" for openai-chat.
    Use .name for the bare model name (what Anthropic's and OpenAI's SDKs expect), and
    .format_name for the request's model.format (a str's .format is str.format).
    """

    name: str
    format_name: str
    record: str

    def __new__(
        cls, name: str = "", format_name: str = "anthropic-messages", record: str = ""
    ) -> Model:
        prefix = {"anthropic-messages": "anthropic/", "openai-chat": "openai/"}.get(format_name, "")
        self = super().__new__(cls, prefix + name if name else "")
        self.name = name
        self.format_name = format_name
        self.record = record
        return self

    def __repr__(self) -> str:
        return (
            f"Model(name={self.name!r}, format_name={self.format_name!r}, record={self.record!r})"
        )


def _log(message: str) -> None:
    """A line for the job's log (stderr): the harness's own diagnostics."""
    try:
        sys.stderr.write(f"[oz0 harness] {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _jsonable(value: Any) -> Any:
    """value if JSON can hold it as it is, else its str()."""
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return str(value)
    return value


class _Writer:
    """Writes protocol lines to the node: one compact JSON object per line, flushed, thread-safe."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._finished = False

    def write(self, message: Mapping[str, Any], *, final: bool = False) -> None:
        line = json.dumps(
            message, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str
        )
        # JSON strings may hold U+2028 and U+2029 raw; escape them so no reader splits the line.
        line = line.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
        size = len(line.encode("utf-8", "backslashreplace")) + 1
        if size > MAX_LINE:
            raise ProtocolError(
                f"a {message.get('type')} line of {size} bytes is over the protocol's limit of "
                f"{MAX_LINE} bytes"
            )
        with self._lock:
            if self._finished:
                _log(f"dropped a {message.get('type')} line after the session's last line")
                return
            self._stream.write(line + "\n")
            self._stream.flush()
            if final:
                self._finished = True


_NODE_CLOSED = "the node closed the session before answering"


class _Waiter:
    def __init__(self) -> None:
        self.event = threading.Event()
        self.answer: dict[str, Any] = {}


class _Inbox:
    """Routes the node's permission answers to the call_tool() that waits for each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[str, _Waiter] = {}
        self._closed: str | None = None  # why, once closed

    def expect(self, id: str) -> _Waiter:
        waiter = _Waiter()
        with self._lock:
            if self._closed is not None:
                waiter.answer = {
                    "type": "permission",
                    "id": id,
                    "decision": "deny",
                    "reason": self._closed,
                }
                waiter.event.set()
            else:
                self._waiters[id] = waiter
        return waiter

    def deliver(self, message: dict[str, Any]) -> None:
        id = message.get("id")
        with self._lock:
            waiter = self._waiters.pop(id, None) if isinstance(id, str) else None
        if waiter is None:
            _log(f"ignored a permission answer for {id!r}: no request of that id is open")
            return
        waiter.answer = message
        waiter.event.set()

    def close(self, reason: str = _NODE_CLOSED) -> None:
        """Denies every open and every later request with reason."""
        with self._lock:
            self._closed = reason
            waiters, self._waiters = self._waiters, {}
        for id, waiter in waiters.items():
            waiter.answer = {"type": "permission", "id": id, "decision": "deny", "reason": reason}
            waiter.event.set()

    def read_from(self, stream: Any) -> None:
        """Reads the node's lines until EOF (run in a daemon thread)."""
        try:
            for raw in stream:
                line = raw.decode("utf-8", "replace").strip()
                if not line:
                    continue
                try:
                    message = json.loads(line)
                except ValueError:
                    _log(f"ignored a line on stdin that is not JSON: {line[:200]!r}")
                    continue
                if not isinstance(message, dict):
                    _log(f"ignored a line on stdin that is not a JSON object: {line[:200]!r}")
                elif message.get("type") == "permission":
                    self.deliver(message)
                else:
                    _log(f"ignored a message of type {message.get('type')!r} on stdin")
        except (OSError, ValueError) as err:
            _log(f"stopped reading stdin: {err}")
        finally:
            self.close()


class Session:
    """One job's session: the request's fields, and the calls your agent makes back to the job.

    Attributes: job, agent, harness, text, input, instructions, model (a Model), model_name,
    tools, limits, workdir, state_dir, options (the agent definition's harness: options).
    """

    def __init__(
        self,
        request: Mapping[str, Any],
        *,
        writer: _Writer | None = None,
        inbox: _Inbox | None = None,
    ) -> None:
        self.request = dict(request)
        self.job: str = str(request.get("job") or os.environ.get("OZ0_JOB", ""))
        self.agent: str = str(request.get("agent") or os.environ.get("OZ0_AGENT", ""))
        self.harness: str = str(request.get("harness") or "")
        self.input: Any = request.get("input")
        text = request.get("text")
        if text is None and self.input is not None:
            text = (
                self.input
                if isinstance(self.input, str)
                else json.dumps(self.input, ensure_ascii=False)
            )
        self.text: str = str(text or "")
        self.instructions: str = str(request.get("instructions") or "")
        model = request.get("model")
        if not isinstance(model, dict):
            model = {}
        self.model = Model(
            str(model.get("name") or ""),
            str(model.get("format") or "anthropic-messages"),
            str(model.get("record") or ""),
        )
        self.model_name: str = self.model.name
        self.tools: list[str] = list(request.get("tools") or [])
        self.limits: dict[str, Any] = dict(request.get("limits") or {})
        self.workdir: str = str(request.get("workdir") or os.getcwd())
        self.state_dir: str = str(request.get("state_dir") or os.environ.get("HOME", ""))
        self.options: dict[str, Any] = dict(request.get("options") or {})

        # A Session made outside main() (in a unit test of your agent, say) writes its events
        # to stderr and has no node to ask: its tool calls are refused.
        self._writer = writer if writer is not None else _Writer(sys.stderr)
        if inbox is None:
            inbox = _Inbox()
            inbox.close("no node to ask: this session does not run under harness.main()")
        self._inbox = inbox
        self._lock = threading.Lock()
        self._steps = 0
        self._ids = itertools.count(1)
        self._speaker: str | None = None  # the agent whose text say() gave last: None is ours
        self._said = False

    def __repr__(self) -> str:
        return f"Session(job={self.job!r}, agent={self.agent!r}, model={self.model!r})"

    # -- the job's live view and trace -------------------------------------------------------

    def say(self, text: str, *, by: str | None = None) -> None:
        """Streams text to the job's live view.

        by names the agent that says it when the session's code runs several (a framework's
        sub-agents); None, the default, is the session's own agent. When the speaker changes,
        the text starts on a line of its own, another agent's with its name, "[billing] ", so
        the live view (which shows the job's agent) says which agent spoke."""
        text = str(text)
        with self._lock:
            if text and by != self._speaker:
                tag = f"[{by}] " if by is not None else ""
                text = ("\n" if self._said else "") + tag + text
                self._speaker = by
            self._said = self._said or bool(text)
            self._writer.write({"type": "say", "text": text})

    def log(self, message: str, level: str = "info") -> None:
        """Writes a line to the job's trace (not its live view)."""
        self._writer.write({"type": "log", "level": str(level), "message": str(message)})

    # -- model calls -------------------------------------------------------------------------

    @property
    def steps(self) -> int:
        """The model calls complete() has made so far."""
        with self._lock:
            return self._steps

    def _take_step(self) -> None:
        limit = self.limits.get("max_steps")
        with self._lock:
            # A missing or non-positive max_steps is no limit here; the gateway still counts.
            if isinstance(limit, int) and limit > 0 and self._steps >= limit:
                raise StepLimitExceeded(
                    f"limits.max_steps reached: this session may make {limit} model "
                    f"call{'s' if limit != 1 else ''} and has made {self._steps}",
                    status=429,
                )
            self._steps += 1

    def complete(
        self,
        prompt: str | list[dict[str, Any]],
        *,
        max_tokens: int = 1024,
        system: str | None = None,
        say: bool = False,
    ) -> str:
        """One model call through the node's LLM proxy, in the format of the session's model
        record: Anthropic's Messages API or OpenAI's Chat Completions (session.model.format_name).

        The system prompt is the agent's instructions unless `system` is given. `prompt` is the
        user message, or a list of messages in the record's format. Returns the text of the
        answer. With say=True the answer is streamed, and each piece of its text is said to the
        job's live view as it arrives (stream() without saying). Counts toward limits.max_steps:
        past it, raises StepLimitExceeded without calling. Raises ModelError when the call fails.
        """
        if say:
            pieces = []
            for piece in self.stream(prompt, max_tokens=max_tokens, system=system):
                self.say(piece)
                pieces.append(piece)
            return "".join(pieces)
        provider, path, body, headers = self._model_request(prompt, max_tokens, system, False)
        answer = self._post(provider, path, body, headers)
        if provider == "OPENAI":
            choices = answer.get("choices")
            message = (
                choices[0].get("message")
                if isinstance(choices, list) and choices and isinstance(choices[0], dict)
                else None
            )
            if not isinstance(message, dict):
                raise ModelError(f"the model API's answer has no message: {str(answer)[:200]}")
            return str(message.get("content") or "")
        content = answer.get("content")
        if not isinstance(content, list):
            raise ModelError(f"the model API's answer has no content: {str(answer)[:200]}")
        return "".join(
            block.get("text", "")
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        )

    def stream(
        self,
        prompt: str | list[dict[str, Any]],
        *,
        max_tokens: int = 1024,
        system: str | None = None,
    ) -> Iterator[str]:
        """complete(), streamed: yields the pieces of the answer's text as they arrive, and
        ends when the answer does. The call is made when iteration starts; it counts toward
        limits.max_steps like complete(). Raises ModelError when the call fails, the model API
        ends the stream with an error, or the stream stops before the answer's end (a cut
        connection): a partial answer is never taken for a whole one."""
        provider, path, body, headers = self._model_request(prompt, max_tokens, system, True)
        with self._open(provider, path, body, headers, "text/event-stream") as response:
            import http.client  # loaded with urllib.request by _open: costs nothing here

            event, data = "", []
            try:
                for raw in response:
                    line = raw.decode("utf-8", "replace").rstrip("\r\n")
                    if line:
                        if line.startswith("event:"):
                            event = line[6:].strip()
                        elif line.startswith("data:"):
                            data.append(line[5:].removeprefix(" "))
                        continue
                    if not data:
                        continue
                    piece, done = _stream_piece(provider, event, "\n".join(data))
                    event, data = "", []
                    if piece:
                        yield piece
                    if done:
                        return
            except (OSError, http.client.HTTPException) as err:  # a timeout, a cut chunk
                raise ModelError(
                    f"the model API's stream broke off: {err or type(err).__name__}"
                ) from None
        end = "[DONE]" if provider == "OPENAI" else "message_stop"
        raise ModelError(
            f"the model API's stream stopped before the answer's end (no {end}): "
            "the connection was cut short"
        )

    def _model_request(
        self,
        prompt: str | list[dict[str, Any]],
        max_tokens: int,
        system: str | None,
        stream: bool,
    ) -> tuple[str, str, dict[str, Any], dict[str, str]]:
        """A model call in the record's format: (provider, path, body, headers)."""
        system = self.instructions if system is None else system
        messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
        body: dict[str, Any] = {"model": self.model_name, "max_tokens": max_tokens}
        if stream:
            body["stream"] = True
        if self.model.format_name == "openai-chat":
            if system:
                messages = [{"role": "system", "content": system}, *messages]
            body["messages"] = messages
            return (
                "OPENAI",
                "/chat/completions",
                body,
                {"authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", "")},
            )
        body["messages"] = messages
        if system:
            body["system"] = system
        return (
            "ANTHROPIC",
            "/v1/messages",
            body,
            {
                "x-api-key": os.environ.get("ANTHROPIC_API_KEY", ""),
                "anthropic-version": ANTHROPIC_VERSION,
            },
        )

    def _open(
        self,
        provider: str,
        path: str,
        body: dict[str, Any],
        headers: dict[str, str],
        accept: str = "application/json",
    ) -> Any:
        """POSTs one model call to {provider}_BASE_URL + path with the job's headers; returns
        the open response (an http.client.HTTPResponse)."""
        base = os.environ.get(f"{provider}_BASE_URL", "").rstrip("/")
        if not base:
            raise ModelError(
                f"{provider}_BASE_URL is not set: run the harness from a node "
                "(oz0 dev, oz0 plugin test) or set it to a model API"
            )
        # Imported here, not at the top: urllib.request costs ~30 ms of every session's start-up.
        import urllib.error
        import urllib.request

        self._take_step()
        request = urllib.request.Request(
            base + path,
            data=json.dumps(body, ensure_ascii=False).encode("utf-8"),
            method="POST",
            headers={
                **headers,
                "content-type": "application/json",
                "accept": accept,
                "Oz0-Job": self.job,
                "Oz0-Agent": self.agent,
                **_trace_headers(),
            },
        )
        try:
            return urllib.request.urlopen(request, timeout=MODEL_TIMEOUT_S)
        except urllib.error.HTTPError as err:
            raise ModelError(
                f"the model API answered {err.code}: {_error_message(err)}", status=err.code
            ) from None
        except urllib.error.URLError as err:
            raise ModelError(f"cannot reach the model API at {base}: {err.reason}") from None
        except OSError as err:  # a timeout included
            raise ModelError(f"the model API did not answer: {err}") from None

    def _post(
        self, provider: str, path: str, body: dict[str, Any], headers: dict[str, str]
    ) -> dict[str, Any]:
        """One model call; returns the answer's JSON object."""
        with self._open(provider, path, body, headers) as response:
            try:
                raw = response.read()
            except OSError as err:  # a timeout included
                raise ModelError(f"the model API did not answer: {err}") from None
        try:
            answer = json.loads(raw)
        except ValueError:
            raise ModelError(
                f"the model API answered with something that is not JSON: {raw[:200]!r}"
            ) from None
        if not isinstance(answer, dict):
            raise ModelError(f"the model API's answer is not an object: {str(answer)[:200]}")
        return answer

    # -- tool calls --------------------------------------------------------------------------

    def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None, fn: Callable[..., Any]
    ) -> Any:
        """Asks the job before a tool call, then runs fn(**arguments) with what it allowed.

        Blocks until the job answers (a person's approval may take a while). Raises Refused
        with the reason when the job says no. The call and its result show in the job.
        """
        call = self.ask(name, arguments)
        try:
            result = fn(**call.arguments)
        except Exception as err:
            call.failed(err)
            raise
        call.done(result)
        return result

    def ask(self, name: str, arguments: Mapping[str, Any] | None) -> ToolCall:
        """Asks the job before a tool call that something else runs, such as a framework's tool
        loop; call_tool() is this and the run. Returns the call with the arguments the job
        allowed: run the tool with those, then say how it went with call.done(result) or
        call.failed(error). Blocks until the job answers; raises Refused when it says no.
        """
        with self._lock:
            id = f"p{next(self._ids)}"
        asked = json.loads(json.dumps(dict(arguments or {}), ensure_ascii=False, default=str))
        waiter = self._inbox.expect(id)
        self._writer.write(
            {"type": "permission_request", "id": id, "tool": name, "arguments": asked}
        )
        waiter.event.wait()
        answer = waiter.answer
        if answer.get("decision") != "allow":
            reason = answer.get("reason")
            raise Refused(str(reason) if reason else f"the job denied {name}")
        allowed = answer.get("arguments")
        return ToolCall(self._writer, id, name, allowed if isinstance(allowed, dict) else asked)


class ToolCall:
    """A tool call the job allowed (Session.ask): run it with `arguments`, then report how it
    went, once, with done() or failed(); the job shows the result."""

    def __init__(self, writer: _Writer, id: str, tool: str, arguments: dict[str, Any]) -> None:
        self.id = id
        self.tool = tool
        self.arguments = arguments
        self._writer = writer
        self._reported = False

    def __repr__(self) -> str:
        return f"ToolCall(id={self.id!r}, tool={self.tool!r}, arguments={self.arguments!r})"

    def done(self, result: Any) -> None:
        """Reports the tool's result."""
        self._report({"result": _jsonable(result)})

    def failed(self, error: BaseException | str) -> None:
        """Reports that the tool failed, with why."""
        if isinstance(error, BaseException):
            error = f"{type(error).__name__}: {error}"
        self._report({"error": str(error)})

    def _report(self, outcome: dict[str, Any]) -> None:
        if self._reported:
            return
        self._reported = True
        self._writer.write({"type": "tool_result", "id": self.id, "tool": self.tool, **outcome})


def _stream_piece(provider: str, event: str, data: str) -> tuple[str, bool]:
    """The text in one server-sent event of a streamed answer, and whether it ends the stream.
    Anthropic's: text_delta events carry text, message_stop ends; OpenAI's: each chunk's
    delta.content, [DONE] ends. An error event raises ModelError."""
    if data == "[DONE]":
        return "", True
    try:
        message = json.loads(data)
    except ValueError:
        return "", False
    if not isinstance(message, dict):
        return "", False
    error = message.get("error")
    if event == "error" or message.get("type") == "error" or error is not None:
        if isinstance(error, dict) and error.get("message"):
            kind = error.get("type") or error.get("code")
            raise ModelError(
                f"the model API ended the stream with an error: "
                f"{kind + ': ' if kind else ''}{error['message']}"
            )
        raise ModelError(f"the model API ended the stream with an error: {data[:500]}")
    if provider == "OPENAI":
        choices = message.get("choices")
        delta = (
            choices[0].get("delta")
            if isinstance(choices, list) and choices and isinstance(choices[0], dict)
            else None
        )
        content = delta.get("content") if isinstance(delta, dict) else None
        return (content if isinstance(content, str) else ""), False
    kind = message.get("type")
    if kind == "message_stop":
        return "", True
    delta = message.get("delta")
    if (
        kind == "content_block_delta"
        and isinstance(delta, dict)
        and delta.get("type") == "text_delta"
    ):
        return str(delta.get("text") or ""), False
    return "", False


def _error_message(err: Any) -> str:  # an urllib.error.HTTPError
    """The provider's message from an error answer: both Anthropic's and OpenAI's shapes have
    error.type and error.message."""
    try:
        raw = err.read()
    except (OSError, ValueError):
        raw = b""
    try:
        body = json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace").strip()[:500] or str(err.reason)
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        kind = error.get("type")
        return f"{kind}: {error['message']}" if kind else str(error["message"])
    if isinstance(error, str):
        return error
    return json.dumps(body, ensure_ascii=False)[:500]


def _read_request(stream: Any) -> dict[str, Any]:
    raw = stream.readline(MAX_LINE + 1)
    if not raw:
        raise ProtocolError("stdin closed before the session request")
    try:
        request = json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        raise ProtocolError("the first line is not a JSON session request") from None
    if not isinstance(request, dict) or request.get("type") != "session":
        raise ProtocolError("the first line is not a session request")
    if request.get("protocol") not in PROTOCOLS:
        raise ProtocolError(f"the session asks for protocol {request.get('protocol')!r}")
    return request


def _speaks() -> str:
    return "this harness speaks protocol " + ", ".join(str(v) for v in PROTOCOLS)


def _attach_trace_context() -> None:
    """Makes the job's span (TRACEPARENT, set by the node) the current OpenTelemetry context, so
    that the spans a framework makes are its children; nothing without OpenTelemetry installed
    (Python's SDK does not read TRACEPARENT itself)."""
    traceparent = os.environ.get("TRACEPARENT")
    if not traceparent:
        return
    try:
        from opentelemetry import (  # pyright: ignore[reportMissingImports]  (when installed)
            context,
            propagate,
        )
    except ImportError:
        return
    context.attach(propagate.extract({"traceparent": traceparent}))


_exporting = False


def export_spans() -> bool:
    """Sends the session's OpenTelemetry spans (its framework's own) to the node's OTLP receiver,
    in batches flushed as the session exits: a tracer provider with the OTLP/HTTP span exporter,
    on the variables the node sets, made the global one. For a framework whose tracing needs a
    provider set up (ADK, Agent Framework); it needs opentelemetry-sdk and
    opentelemetry-exporter-otlp-proto-http. Returns whether it did so now: not without a receiver
    (OTEL_EXPORTER_OTLP_ENDPOINT unset), nor a second time."""
    global _exporting
    if _exporting or not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return False
    from opentelemetry import trace  # pyright: ignore[reportMissingImports]
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # pyright: ignore[reportMissingImports]
        OTLPSpanExporter,
    )
    from opentelemetry.sdk.resources import Resource  # pyright: ignore[reportMissingImports]
    from opentelemetry.sdk.trace import TracerProvider  # pyright: ignore[reportMissingImports]
    from opentelemetry.sdk.trace.export import (  # pyright: ignore[reportMissingImports]
        BatchSpanProcessor,
    )

    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME: the agent
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _exporting = True
    return True


def gateway_tls(base_url: str) -> ssl.SSLContext | bool:
    """What an HTTP client of the gateway at base_url checks TLS with (httpx's verify=): True
    (the system's certificates) for an https:// gateway; for the node's plain-HTTP one, a context
    that trusts nothing, so that a client does not load a certificate store it never uses (16 to
    20 ms of each job) and TLS through it fails rather than goes unchecked."""
    if base_url.startswith("http://"):
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies, with no certificate loaded
    return True


def _trace_headers() -> dict[str, str]:
    """The trace context of a model call (the traceparent header): the current span's when
    OpenTelemetry is in use, else the job's span (TRACEPARENT)."""
    carrier: dict[str, str] = {}
    if "opentelemetry.propagate" in sys.modules:
        from opentelemetry import propagate  # pyright: ignore[reportMissingImports]

        propagate.inject(carrier)
    traceparent = os.environ.get("TRACEPARENT")
    if "traceparent" not in carrier and traceparent:
        carrier["traceparent"] = traceparent
    return carrier


def _exit(code: int) -> NoReturn:
    """Exits promptly, whatever threads are still blocked."""
    runner = getattr(atexit, "_run_exitfuncs", None)
    if runner is not None:
        thread = threading.Thread(target=runner, name="oz0-atexit", daemon=True)
        thread.start()
        thread.join(EXIT_GRACE_S)
    for stream in (sys.stderr, sys.__stderr__, sys.__stdout__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def main(run: Callable[[Session], Any]) -> NoReturn:
    """Runs one session: reads the request, calls run(session), writes its result, exits."""
    # stdout is the protocol's alone: keep a private handle on it, then point fd 1 (and so
    # print(), subprocesses and C extensions) at stderr.
    proto_fd = os.dup(1)
    os.dup2(2, 1)
    try:
        sys.stdout.flush()  # anything printed before main() goes to stderr too
    except (AttributeError, OSError, ValueError):
        pass
    sys.stdout = sys.stderr
    proto_out = os.fdopen(proto_fd, "w", encoding="utf-8", errors="backslashreplace", newline="\n")
    writer = _Writer(proto_out)
    # stdin is the node's too: your code reads /dev/null, the harness reads the real one.
    proto_in = os.fdopen(os.dup(0), "rb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    # Cancel and timeout are SIGTERM: end at once, whatever a library installed.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    try:
        request = _read_request(proto_in)
    except ProtocolError as err:
        _log(str(err))
        try:
            writer.write({"type": "error", "message": f"{err}: {_speaks()}"}, final=True)
        except (OSError, ValueError) as lost:
            _log(f"cannot write the session's last line: {lost}")
        _exit(1)

    _attach_trace_context()
    inbox = _Inbox()
    reader = threading.Thread(
        target=inbox.read_from, args=(proto_in,), name="oz0-stdin", daemon=True
    )
    reader.start()

    try:
        output = run(Session(request, writer=writer, inbox=inbox))
        writer.write({"type": "result", "output": _jsonable(output)}, final=True)
        code = 0
    except BaseException as err:  # every failure, an interrupt included, ends with an error
        traceback.print_exc(file=sys.stderr)
        message = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
        try:
            writer.write({"type": "error", "message": message[:1_000_000]}, final=True)
        except (OSError, ValueError, ProtocolError) as lost:  # the node is gone: nobody to tell
            _log(f"cannot write the session's last line: {lost}")
        code = 1
    _exit(code)
