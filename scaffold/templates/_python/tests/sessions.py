"""What the tests share: the harness run over a pipe as a node runs it, and a fake model API.

Standard library only. Not a test module itself: test_*.py files import it.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

PACKAGE = "{{.Package}}"
NAME = "{{.Name}}"

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
INSTRUCTIONS = (ROOT / "prompts" / f"{NAME}.md").read_text(encoding="utf-8")

TICKET = "I was charged twice for my order"
MODEL_NAME = "claude-fake-1"
SESSION_KEY = "oz0s_test_0123456789abcdef"
JOB = "job_test_1"
# The job's span, as the node names it to the session (W3C trace context).
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

TIMEOUT = 120.0
"""Seconds for any one wait, a bound on failure only: a broken harness fails the test instead of
hanging it. Generous: a framework's first import on a busy machine takes a while."""

Answer = Callable[["Run", dict[str, Any]], None]
Script = Callable[[dict[str, Any], list[str], list[str]], tuple[str, list[tuple[str, Any]]]]


class FakeModelAPI:
    """Anthropic's Messages API and OpenAI's Chat Completions, scripted, speaking as the real
    APIs do: JSON, or server-sent events for a request with "stream": true (the SDKs' streaming
    clients parse them, tool calls included). It records every request and answers `text`.

    As a model that uses tools: with `tool_arguments` set, a request that offers tools gets a
    call of the first with those arguments; with `tool_calls` set, one turn calling each of
    those (name, arguments). A request that ends with the tools' answers gets "The tool
    answered: <the answers, joined by "; ">". With `status` set, it answers that HTTP error.

    With `script` set, it decides every answer: script(body, answers, offered) returns the turn,
    (text, [(name, arguments), ...]), from the request's body, the tools' answers it ends with
    and the names of the tools it offers (a test of an agent that hands over to another, say).

    A streamed text comes as one event for each of `pieces` (default: the text whole); with
    `paced` set, each piece after the first waits for release(), so a test can see one arrive
    before the next is sent; with `stream_error` set, the stream ends with that error event
    after the pieces; with `stream_cut` set, it stops after the pieces, as a connection cut
    short."""

    def __init__(self, text: str = "") -> None:
        self.text = text
        self.tool_arguments: dict[str, Any] | None = None
        self.tool_calls: list[tuple[str, dict[str, Any]]] = []
        self.script: Script | None = None
        self.status = 0
        self.pieces: list[str] = []
        self.paced = False
        self.stream_error = ""
        self.stream_cut = False
        self._released = threading.Semaphore(0)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' pooled clients expect

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                with api.lock:
                    api.requests.append(
                        {"path": self.path, "headers": dict(self.headers.items()), "body": body}
                    )
                if not isinstance(body, dict):
                    body = {}
                openai = self.path.endswith("/chat/completions")
                if api.status:
                    kind = "rate_limit_error" if api.status == 429 else "api_error"
                    message = f"the fake model API answers {api.status}"
                    self.answer(
                        api.status,
                        {"error": {"type": kind, "message": message, "code": None}}
                        if openai
                        else {"type": "error", "error": {"type": kind, "message": message}},
                    )
                elif not openai and not self.path.endswith("/v1/messages"):
                    error = {"type": "not_found_error", "message": f"no route {self.path}"}
                    self.answer(404, {"type": "error", "error": error})
                elif body.get("stream"):
                    self.stream(api.stream_events(openai, body))
                else:
                    self.answer(200, api.openai(body) if openai else api.anthropic(body))

            def answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode("utf-8")
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def stream(self, events: Any) -> None:
                # Chunked, as the real APIs send it: the body ends without closing the
                # connection (a stream cut short ends its body before the answer's end).
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for event in events:
                    data = event.encode("utf-8")
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        host, port = self.server.server_address[:2]
        # Base URLs with a path and a trailing slash, like the gateway's.
        self.anthropic_url = f"http://{host}:{port}/gateway/anthropic/"
        self.openai_url = f"http://{host}:{port}/gateway/openai/"

    def turn(
        self, body: dict[str, Any], answers: list[str], offered: list[str]
    ) -> tuple[str, list[tuple[str, Any]]]:
        """What the model says to a request: (text, tool calls). answers are the tools' answers
        the request ends with; offered the names of the tools it offers."""
        if self.script is not None:
            return self.script(body, answers, offered)
        if self.tool_arguments is None and not self.tool_calls:
            return self.text, []
        if answers:
            return "The tool answered: " + "; ".join(answers), []
        if self.tool_calls:
            return "", list(self.tool_calls)
        if offered:
            return "", [(offered[0], self.tool_arguments)]
        return self.text, []

    def anthropic_turn(self, body: dict[str, Any]) -> tuple[str, list[tuple[str, Any]]]:
        messages = body.get("messages") or [{}]
        last = messages[-1].get("content") if isinstance(messages[-1], dict) else None
        results = (
            [_text(b) for b in last if isinstance(b, dict) and b.get("type") == "tool_result"]
            if isinstance(last, list)
            else []
        )
        offered = [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]
        return self.turn(body, results, offered)

    def openai_turn(self, body: dict[str, Any]) -> tuple[str, list[tuple[str, Any]]]:
        results: list[str] = []
        for message in reversed(body.get("messages") or []):
            if not isinstance(message, dict) or message.get("role") != "tool":
                break
            results.insert(0, _text(message))
        offered = [
            str((t.get("function") or {}).get("name"))
            for t in body.get("tools") or []
            if isinstance(t, dict)
        ]
        return self.turn(body, results, offered)

    def anthropic(self, body: dict[str, Any]) -> dict[str, Any]:
        text, calls = self.anthropic_turn(body)
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if not calls else []
        content += [
            {"type": "tool_use", "id": f"toolu_fake{i}", "name": name, "input": arguments}
            for i, (name, arguments) in enumerate(calls, 1)
        ]
        return {
            "id": "msg_fake_1",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": content,
            "stop_reason": "tool_use" if calls else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 42, "output_tokens": 17},
        }

    def openai(self, body: dict[str, Any]) -> dict[str, Any]:
        text, calls = self.openai_turn(body)
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = [
                {
                    "id": f"call_fake{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
                for i, (name, arguments) in enumerate(calls, 1)
            ]
        return {
            "id": "chatcmpl-fake1",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model"),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls" if calls else "stop",
                    "message": message,
                }
            ],
            "usage": {"prompt_tokens": 42, "completion_tokens": 17, "total_tokens": 59},
        }

    def release(self) -> None:
        """Lets the next piece of a paced stream go."""
        self._released.release()

    def stream_events(self, openai: bool, body: dict[str, Any]) -> Any:
        """The server-sent events of a streamed answer, in either API's shape, paced."""
        model = body.get("model")
        text, calls = self.openai_turn(body) if openai else self.anthropic_turn(body)

        def event(name: str, data: Any) -> str:
            head = "" if openai else f"event: {name}\n"
            return head + "data: " + (data if isinstance(data, str) else json.dumps(data)) + "\n\n"

        def chunk(delta: dict[str, Any] | None, finish: str | None = None, **more: Any) -> str:
            choices = (
                [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
            )
            return event(
                "",
                {
                    "id": "chatcmpl-fake1",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": model,
                    "choices": choices,
                    **more,
                },
            )

        def block(index: int, start: dict[str, Any], deltas: list[dict[str, Any]]) -> Any:
            yield event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
            for delta in deltas:
                yield event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            yield event("content_block_stop", {"type": "content_block_stop", "index": index})

        if openai:
            yield chunk({"role": "assistant", "content": ""})
        else:
            yield event(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_fake_1",
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {"input_tokens": 42, "output_tokens": 1},
                    },
                },
            )
        if calls:
            for i, (name, arguments) in enumerate(calls):
                if openai:
                    call = {"id": f"call_fake{i + 1}", "type": "function"}
                    start = {"name": name, "arguments": ""}
                    yield chunk({"tool_calls": [{"index": i, **call, "function": start}]})
                    more = {"arguments": json.dumps(arguments)}
                    yield chunk({"tool_calls": [{"index": i, "function": more}]})
                else:
                    start = {"type": "tool_use", "id": f"toolu_fake{i + 1}", "name": name}
                    yield from block(
                        i,
                        {**start, "input": {}},
                        [{"type": "input_json_delta", "partial_json": json.dumps(arguments)}],
                    )
        else:
            if not openai:
                yield event(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
            pieces = self.pieces if self.pieces and text == self.text else [text]
            for i, piece in enumerate(pieces):
                if i > 0 and self.paced and not self._released.acquire(timeout=TIMEOUT):
                    return  # the test gave up: end the stream cut short
                if openai:
                    yield chunk({"content": piece})
                else:
                    yield event(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": 0,
                            "delta": {"type": "text_delta", "text": piece},
                        },
                    )
            if self.stream_cut:
                return
            if self.stream_error:
                error = {"type": self.stream_error, "message": "the fake model API is overloaded"}
                yield event(
                    "error", {"error": error} if openai else {"type": "error", "error": error}
                )
                return
            if not openai:
                yield event("content_block_stop", {"type": "content_block_stop", "index": 0})
        if openai:
            yield chunk({}, "tool_calls" if calls else "stop")
            if (body.get("stream_options") or {}).get("include_usage"):
                usage = {"prompt_tokens": 42, "completion_tokens": 17, "total_tokens": 59}
                yield chunk(None, usage=usage)
            yield event("", "[DONE]")
            return
        yield event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": "tool_use" if calls else "end_turn",
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": 17},
            },
        )
        yield event("message_stop", {"type": "message_stop"})

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def calls(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.requests)


def _text(block: dict[str, Any]) -> str:
    """The text of a tool result: Anthropic's tool_result block or OpenAI's tool message."""
    content = block.get("content")
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return "" if content is None else str(content)


class Run:
    """One harness process, started as a node starts it."""

    def __init__(self, test: SessionCase, argv: list[str] | None = None) -> None:
        self.test = test
        self.proc = subprocess.Popen(
            argv or [sys.executable, "-m", PACKAGE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=test.workdir,
            env=test.env(),
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stdout: list[bytes] = []
        self.stderr: list[bytes] = []
        threading.Thread(target=self._pump, daemon=True).start()
        self.stderr_reader = threading.Thread(target=self._drain, daemon=True)
        self.stderr_reader.start()

    # The readers end at EOF, or when kill() closes the pipe under them (ValueError, OSError):
    # the test is over then.
    def _pump(self) -> None:
        assert self.proc.stdout is not None
        try:
            for line in iter(self.proc.stdout.readline, b""):
                self.lines.put(line)
        except (OSError, ValueError):
            pass
        self.lines.put(None)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        try:
            for line in iter(self.proc.stderr.readline, b""):
                self.stderr.append(line)
        except (OSError, ValueError):
            pass

    def send(self, message: dict[str, Any] | str) -> None:
        assert self.proc.stdin is not None
        line = message if isinstance(message, str) else json.dumps(message)
        self.proc.stdin.write(line.encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def close_stdin(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()

    def next_event(self) -> dict[str, Any] | None:
        """The next line of stdout, parsed; None at EOF."""
        try:
            raw = self.lines.get(timeout=TIMEOUT)
        except queue.Empty:
            self.test.fail(f"no line from the harness in {TIMEOUT} s{self.log()}")
        if raw is None:
            return None
        self.stdout.append(raw)
        try:
            event = json.loads(raw)
        except ValueError:
            self.test.fail(f"stdout line is not JSON: {raw!r}{self.log()}")
        self.test.assertIsInstance(event, dict)
        self.test.assertTrue(raw.endswith(b"\n"))
        return event

    def finish(self) -> int:
        """Closes stdin as a node does after the last line; returns the exit code."""
        self.close_stdin()
        try:
            code = self.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.test.fail(f"the harness did not exit after its last line{self.log()}")
        while (event := self.next_event()) is not None:
            self.test.fail(f"a line after the last: {event}")
        return code

    def log(self) -> str:
        """The harness's stderr so far; all of it once the process has exited."""
        if self.proc.poll() is not None:
            # The reader may not have drained the pipe yet: wait for it to reach the end.
            self.stderr_reader.join(timeout=TIMEOUT)
        return "\nstderr:\n" + b"".join(self.stderr).decode("utf-8", "replace")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


class SessionCase(unittest.TestCase):
    """Runs sessions of the harness as a node does, against a fake model API."""

    model_text = ""
    """What the fake model API answers."""

    def setUp(self) -> None:
        self.api = FakeModelAPI(self.model_text)
        self.addCleanup(self.api.close)
        self.tmp = Path(tempfile.mkdtemp(prefix="oz0-harness-test-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.workdir = self.tmp / "work"
        self.state_dir = self.tmp / "state"
        self.workdir.mkdir()
        self.state_dir.mkdir()

    def env(self) -> dict[str, str]:
        headers = f"Oz0-Job: {JOB}\nOz0-Agent: {NAME}"
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(self.state_dir),
            "LANG": "C.UTF-8",
            "TMPDIR": str(self.state_dir),
            "PYTHONPATH": str(SRC),
            "PYTHONUNBUFFERED": "1",
            "ANTHROPIC_BASE_URL": self.api.anthropic_url,
            "ANTHROPIC_API_KEY": SESSION_KEY,
            "OPENAI_BASE_URL": self.api.openai_url,
            "OPENAI_API_KEY": SESSION_KEY,
            "ANTHROPIC_CUSTOM_HEADERS": headers,
            "OPENAI_CUSTOM_HEADERS": headers,
            "OZ0_JOB": JOB,
            "OZ0_AGENT": NAME,
            "TRACEPARENT": TRACEPARENT,
        }
        if "SYSTEMROOT" in os.environ:  # Windows cannot start Python without it
            env["SYSTEMROOT"] = os.environ["SYSTEMROOT"]
        return env

    def request(self, text: str = TICKET, **changes: Any) -> dict[str, Any]:
        request: dict[str, Any] = {
            "type": "session",
            "protocol": 1,
            "job": JOB,
            "agent": NAME,
            "harness": NAME,
            "text": text,
            "input": text,
            "instructions": INSTRUCTIONS,
            "model": {"name": MODEL_NAME, "format": "anthropic-messages", "record": "fake"},
            "tools": ["notify_team"],
            "limits": {"max_steps": 10, "timeout_s": 600},
            "workdir": str(self.workdir),
            "state_dir": str(self.state_dir),
            "options": {},
        }
        request.update(changes)
        return request

    def package_with(self, files: Mapping[str, str | None]) -> list[str]:
        """The argv of the harness run as `python -m` runs it, from a copy of the package with
        files (their paths in the package, their text) written over it: an agent.py of a
        test's own, say. A file whose text is None is left out of the copy."""
        copy = self.tmp / "package"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(SRC / PACKAGE, copy / PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
        for path, text in files.items():
            if text is None:
                (copy / PACKAGE / path).unlink(missing_ok=True)
            else:
                (copy / PACKAGE / path).write_text(text, encoding="utf-8")
        start = (
            f"import runpy, sys; sys.path.insert(0, {str(copy)!r}); "
            f"runpy.run_module({PACKAGE!r}, run_name='__main__', alter_sys=True)"
        )
        return [sys.executable, "-c", start]

    def start(self, argv: list[str] | None = None) -> Run:
        run = Run(self, argv)
        self.addCleanup(run.kill)
        return run

    def session(
        self,
        answer: Answer | None = None,
        request: dict[str, Any] | None = None,
        argv: list[str] | None = None,
    ) -> tuple[list[dict[str, Any]], int, Run]:
        """Runs one session to its last line. answer(run, permission_request) answers each
        permission request. Returns (events, exit code, run)."""
        run = self.start(argv)
        run.send(request or self.request())
        events = []
        while True:
            event = run.next_event()
            if event is None:
                self.fail(f"stdout closed before a result or an error{run.log()}")
            events.append(event)
            if event["type"] == "permission_request":
                self.assertIsNotNone(answer, f"unexpected permission request {event}")
                assert answer is not None
                answer(run, event)
            if event["type"] in ("result", "error"):
                break
        return events, run.finish(), run

    @staticmethod
    def allow(run: Run, event: dict[str, Any]) -> None:
        run.send(
            {
                "type": "permission",
                "id": event["id"],
                "decision": "allow",
                "arguments": event["arguments"],
            }
        )

    @staticmethod
    def deny(reason: str) -> Answer:
        def answer(run: Run, event: dict[str, Any]) -> None:
            run.send(
                {"type": "permission", "id": event["id"], "decision": "deny", "reason": reason}
            )

        return answer

    @staticmethod
    def says(events: list[dict[str, Any]]) -> str:
        """Everything the session said, joined."""
        return "".join(e["text"] for e in events if e["type"] == "say")
