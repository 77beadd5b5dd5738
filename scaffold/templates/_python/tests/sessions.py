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
from collections.abc import Callable
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

TIMEOUT = 10.0  # seconds for any one wait: a broken harness fails the test instead of hanging

Answer = Callable[["Run", dict[str, Any]], None]


class FakeModelAPI:
    """Anthropic's Messages API and OpenAI's Chat Completions, scripted: records every request
    and answers `text`. With `tool_arguments` set, it answers as a model that uses tools: a
    request that offers tools gets a call of the first, with those arguments; one that ends with
    the tool's answer gets "The tool answered: <the answer>". With `status` set, it answers that
    HTTP error instead. A request with "stream": true gets the text as server-sent events, one
    event for each of `pieces` (default: the text whole); with `paced` set, each piece after the
    first waits for release(), so a test can see one arrive before the next is sent; with
    `stream_error` set, the stream ends with that error event after the pieces; with
    `stream_cut` set, it stops after the pieces, as a connection cut short."""

    def __init__(self, text: str = "") -> None:
        self.text = text
        self.tool_arguments: dict[str, Any] | None = None
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
                if api.status:
                    kind = "rate_limit_error" if api.status == 429 else "api_error"
                    self.answer(
                        api.status,
                        {
                            "type": "error",
                            "error": {
                                "type": kind,
                                "message": f"the fake model API answers {api.status}",
                            },
                        },
                    )
                elif body.get("stream"):
                    self.stream(api.stream_events(self.path, body))
                elif self.path.endswith("/v1/messages"):
                    self.answer(200, api.anthropic(body))
                elif self.path.endswith("/chat/completions"):
                    self.answer(200, api.openai(body))
                else:
                    error = {"type": "not_found_error", "message": f"no route {self.path}"}
                    self.answer(404, {"type": "error", "error": error})

            def answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode("utf-8")
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def stream(self, events: Any) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for event in events:
                    self.wfile.write(event.encode("utf-8"))
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

    def anthropic(self, body: dict[str, Any]) -> dict[str, Any]:
        content: list[dict[str, Any]] = [{"type": "text", "text": self.text}]
        stop = "end_turn"
        messages = body.get("messages") or [{}]
        last = messages[-1].get("content")
        results = (
            [b for b in last if isinstance(b, dict) and b.get("type") == "tool_result"]
            if isinstance(last, list)
            else []
        )
        if self.tool_arguments is not None and results:
            content = [{"type": "text", "text": "The tool answered: " + _text(results[0])}]
        elif self.tool_arguments is not None and body.get("tools"):
            content = [
                {
                    "type": "tool_use",
                    "id": "toolu_fake1",
                    "name": body["tools"][0]["name"],
                    "input": self.tool_arguments,
                }
            ]
            stop = "tool_use"
        return {
            "id": "msg_fake_1",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 42, "output_tokens": 17},
        }

    def openai(self, body: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        finish = "stop"
        messages = body.get("messages") or [{}]
        if self.tool_arguments is not None and messages[-1].get("role") == "tool":
            message["content"] = "The tool answered: " + _text(messages[-1])
        elif self.tool_arguments is not None and body.get("tools"):
            name = body["tools"][0]["function"]["name"]
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_fake1",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(self.tool_arguments)},
                    }
                ],
            }
            finish = "tool_calls"
        return {
            "id": "chatcmpl-fake1",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": {"prompt_tokens": 42, "completion_tokens": 17, "total_tokens": 59},
        }

    def release(self) -> None:
        """Lets the next piece of a paced stream go."""
        self._released.release()

    def stream_events(self, path: str, body: dict[str, Any]) -> Any:
        """The server-sent events of a streamed answer, in either API's shape, paced."""
        openai = path.endswith("/chat/completions")
        model = body.get("model")

        def event(name: str, data: Any) -> str:
            head = "" if openai else f"event: {name}\n"
            return head + "data: " + (data if isinstance(data, str) else json.dumps(data)) + "\n\n"

        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            return event(
                "",
                {
                    "id": "chatcmpl-fake1",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                },
            )

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
            yield event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            )
        for i, piece in enumerate(self.pieces or [self.text]):
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
            yield event("error", {"error": error} if openai else {"type": "error", "error": error})
            return
        if openai:
            yield chunk({}, "stop")
            yield event("", "[DONE]")
            return
        yield event("content_block_stop", {"type": "content_block_stop", "index": 0})
        yield event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
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

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self.lines.put(line)
        self.lines.put(None)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in iter(self.proc.stderr.readline, b""):
            self.stderr.append(line)

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

    extra_pythonpath: tuple[Path, ...] = ()
    """Directories put before src/ on PYTHONPATH (stand-ins of a framework, say)."""

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
            "PYTHONPATH": os.pathsep.join(str(p) for p in (*self.extra_pythonpath, SRC)),
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "ANTHROPIC_BASE_URL": self.api.anthropic_url,
            "ANTHROPIC_API_KEY": SESSION_KEY,
            "OPENAI_BASE_URL": self.api.openai_url,
            "OPENAI_API_KEY": SESSION_KEY,
            "ANTHROPIC_CUSTOM_HEADERS": headers,
            "OPENAI_CUSTOM_HEADERS": headers,
            "OZ0_JOB": JOB,
            "OZ0_AGENT": NAME,
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
