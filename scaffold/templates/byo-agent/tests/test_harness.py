"""The harness over a pipe, as a node runs it, against a fake model API served by the test.

Standard library only: `uv run pytest` and `python3 -m unittest discover -s tests -v` both run it.
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PACKAGE = "{{.Package}}"
NAME = "{{.Name}}"

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
INSTRUCTIONS = (ROOT / "prompts" / f"{NAME}.md").read_text(encoding="utf-8")

TICKET = "I was charged twice for my order"
REPLY = "Sorry about the double charge; we have refunded the second one."
MODEL_TEXT = json.dumps({"team": "billing", "reply": REPLY})
MODEL_NAME = "claude-fake-1"
SESSION_KEY = "oz0s_test_0123456789abcdef"
JOB = "job_test_1"

TIMEOUT = 10.0  # seconds for any one wait: a broken harness fails the test instead of hanging


class FakeModelAPI:
    """Anthropic's Messages API, scripted: records every request, answers MODEL_TEXT."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
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
                if not self.path.endswith("/v1/messages"):
                    error = {"type": "not_found_error", "message": f"no route {self.path}"}
                    self.answer(404, {"type": "error", "error": error})
                    return
                model = body.get("model") if isinstance(body, dict) else None
                self.answer(200, {
                    "id": "msg_fake_1",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [{"type": "text", "text": MODEL_TEXT}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 42, "output_tokens": 17},
                })

            def answer(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode("utf-8")
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        host, port = self.server.server_address[:2]
        # A base URL with a path and a trailing slash, like the gateway's.
        self.base_url = f"http://{host}:{port}/gateway/anthropic/"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def calls(self) -> list[dict]:
        with self.lock:
            return list(self.requests)


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
        for line in iter(self.proc.stdout.readline, b""):
            self.lines.put(line)
        self.lines.put(None)

    def _drain(self) -> None:
        for line in iter(self.proc.stderr.readline, b""):
            self.stderr.append(line)

    def send(self, message: dict | str) -> None:
        line = message if isinstance(message, str) else json.dumps(message)
        self.proc.stdin.write(line.encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def close_stdin(self) -> None:
        if not self.proc.stdin.closed:
            self.proc.stdin.close()

    def next_event(self) -> dict | None:
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
                stream.close()
            except OSError:
                pass


class SessionCase(unittest.TestCase):
    """Runs sessions of the harness as a node does, against a fake Anthropic API."""

    def setUp(self) -> None:
        self.api = FakeModelAPI()
        self.addCleanup(self.api.close)
        self.tmp = Path(tempfile.mkdtemp(prefix="oz0-harness-test-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.workdir = self.tmp / "work"
        self.state_dir = self.tmp / "state"
        self.workdir.mkdir()
        self.state_dir.mkdir()

    def env(self) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(self.state_dir),
            "LANG": "C.UTF-8",
            "TMPDIR": str(self.state_dir),
            "PYTHONPATH": str(SRC),
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "ANTHROPIC_BASE_URL": self.api.base_url,
            "ANTHROPIC_API_KEY": SESSION_KEY,
            "OZ0_JOB": JOB,
            "OZ0_AGENT": NAME,
        }
        if "SYSTEMROOT" in os.environ:  # Windows cannot start Python without it
            env["SYSTEMROOT"] = os.environ["SYSTEMROOT"]
        return env

    def request(self, text: str = TICKET, **changes: object) -> dict:
        request = {
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

    def session(self, answer=None, request: dict | None = None, argv: list[str] | None = None):
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
                answer(run, event)
            if event["type"] in ("result", "error"):
                break
        return events, run.finish(), run

    @staticmethod
    def allow(run: Run, event: dict) -> None:
        run.send({"type": "permission", "id": event["id"], "decision": "allow",
                  "arguments": event["arguments"]})


class HarnessTest(SessionCase):

    def test_happy_path(self) -> None:
        events, code, run = self.session(self.allow)
        self.assertEqual(code, 0, run.log())
        self.assertEqual([e["type"] for e in events],
                         ["say", "permission_request", "tool_result", "result"])
        say, asked, told, result = events
        self.assertEqual(say["text"], "Sorting the ticket. ")
        self.assertEqual(asked["tool"], "notify_team")
        self.assertEqual(asked["arguments"], {"team": "billing", "summary": TICKET})
        self.assertEqual(told["id"], asked["id"])
        self.assertEqual(told["tool"], "notify_team")
        self.assertEqual(told["result"], f"told the billing team: {TICKET}")
        self.assertNotIn("error", told)
        self.assertEqual(result["output"], f"billing: {REPLY}")
        self.assertEqual(len(self.api.calls()), 1)

    def test_allow_with_changed_arguments(self) -> None:
        def answer(run: Run, event: dict) -> None:
            run.send("this line is not JSON")  # stray input is ignored
            run.send({"type": "something_new", "id": event["id"]})  # so is an unknown type
            run.send({"type": "permission", "id": "p999", "decision": "allow"})  # and a stranger
            run.send({"type": "permission", "id": event["id"], "decision": "allow",
                      "arguments": {"team": "account", "summary": "changed by a hook"}})

        events, code, run = self.session(answer)
        self.assertEqual(code, 0, run.log())
        told = next(e for e in events if e["type"] == "tool_result")
        self.assertEqual(told["result"], "told the account team: changed by a hook")
        self.assertEqual(events[-1], {"type": "result", "output": f"billing: {REPLY}"})

    def test_denied_tool(self) -> None:
        def deny(run: Run, event: dict) -> None:
            run.send({"type": "permission", "id": event["id"], "decision": "deny",
                      "reason": "policy says no"})

        events, code, run = self.session(deny)
        self.assertEqual(code, 0, run.log())
        self.assertEqual([e["type"] for e in events],
                         ["say", "permission_request", "say", "result"])
        self.assertEqual(events[2]["text"], "(The team was not told: policy says no) ")
        self.assertEqual(events[-1]["output"], f"billing: {REPLY}")

    def test_node_closing_stdin_refuses_open_requests(self) -> None:
        events, code, run = self.session(lambda run, event: run.close_stdin())
        self.assertEqual(code, 0, run.log())
        self.assertEqual(events[2]["type"], "say")
        self.assertIn("The team was not told: the node closed the session", events[2]["text"])
        self.assertEqual(events[-1]["type"], "result")

    def test_max_steps(self) -> None:
        script = (
            f"from {PACKAGE}.harness import main\n"
            "def run(session):\n"
            "    session.complete('one')\n"
            "    session.complete('two')\n"
            "    return 'not reached'\n"
            "main(run)\n"
        )
        request = self.request(limits={"max_steps": 1, "timeout_s": 600})
        events, code, run = self.session(request=request, argv=[sys.executable, "-c", script])
        self.assertEqual(code, 1)
        self.assertEqual(events[-1]["type"], "error")
        self.assertIn("limits.max_steps", events[-1]["message"])
        self.assertIn("1", events[-1]["message"])
        self.assertEqual(len(self.api.calls()), 1)

    def test_model_call_headers_and_body(self) -> None:
        events, code, run = self.session(self.allow)
        self.assertEqual(code, 0, run.log())
        calls = self.api.calls()
        self.assertEqual(len(calls), 1)
        call = calls[0]
        headers = {k.lower(): v for k, v in call["headers"].items()}
        self.assertEqual(call["path"], "/gateway/anthropic/v1/messages")
        self.assertEqual(headers["x-api-key"], SESSION_KEY)
        self.assertEqual(headers["anthropic-version"], "2023-06-01")
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(headers["oz0-job"], JOB)
        self.assertEqual(headers["oz0-agent"], NAME)
        body = call["body"]
        self.assertEqual(body["model"], MODEL_NAME)
        self.assertEqual(body["system"], INSTRUCTIONS)
        self.assertIsInstance(body["max_tokens"], int)
        self.assertEqual(body["messages"][0]["role"], "user")
        self.assertIn(TICKET, body["messages"][0]["content"])

    def test_stray_output_does_not_corrupt_stdout(self) -> None:
        script = (
            "import os, sys\n"
            f"from {PACKAGE}.harness import main\n"
            "def run(session):\n"
            "    print('a stray print')\n"
            "    sys.stdout.write('no newline')\n"
            "    os.write(1, b'straight to fd 1\\n')\n"
            "    os.system('echo from a child process')\n"
            "    session.say('still fine')\n"
            "    print(input.__name__, sys.stdin.read())\n"
            "    return {'ok': True, 'text': session.text}\n"
            "main(run)\n"
        )
        events, code, run = self.session(argv=[sys.executable, "-c", script])
        self.assertEqual(code, 0, run.log())
        self.assertEqual(events, [{"type": "say", "text": "still fine"},
                                  {"type": "result", "output": {"ok": True, "text": TICKET}}])
        for line in run.stdout:
            self.assertIsInstance(json.loads(line), dict)
        log = run.log()
        for stray in ("a stray print", "no newline", "straight to fd 1", "from a child process"):
            self.assertIn(stray, log)

    def test_failing_agent_ends_with_an_error(self) -> None:
        script = (
            f"from {PACKAGE}.harness import main\n"
            "def run(session):\n"
            "    raise RuntimeError('the agent broke')\n"
            "main(run)\n"
        )
        events, code, run = self.session(argv=[sys.executable, "-c", script])
        self.assertEqual(code, 1)
        self.assertEqual(events, [{"type": "error", "message": "RuntimeError: the agent broke"}])
        self.assertIn("Traceback", run.log())

    def test_other_protocol_is_refused(self) -> None:
        events, code, run = self.session(request=self.request(protocol=2))
        self.assertEqual(code, 1)
        self.assertEqual(len(events), 1)
        self.assertEqual(events[0]["type"], "error")
        self.assertIn("protocol 1", events[0]["message"])
        self.assertEqual(self.api.calls(), [])

    def test_first_line_not_a_session(self) -> None:
        events, code, run = self.session(request={"type": "permission", "id": "p1"})
        self.assertEqual(code, 1)
        self.assertEqual(events[0]["type"], "error")
        self.assertIn("protocol 1", events[0]["message"])


if __name__ == "__main__":
    unittest.main()


# The adapters, driven by stand-ins with the shape of a compiled LangGraph graph and a CrewAI
# crew (no framework is installed to test them): each calls its tool, made with asked(), once.
ADAPTER_SCRIPT = """
from PKG.harness import main
from PKG.adapters import asked, run_crew, run_langgraph

def lookup_order(order_id: str, detail: bool = False) -> str:
    "Look an order up."
    return "order " + order_id + " ships tomorrow"

class Graph:
    def __init__(self, tool):
        self.tool = tool

    def invoke(self, state, config=None):
        text = state["messages"][0]["content"]
        seen = self.tool(order_id="A-1")
        answer = dict(role="assistant", content=[dict(type="text", text=seen)])
        return dict(messages=[dict(role="user", content=text), answer])

class Output:
    def __init__(self, raw):
        self.raw = raw

class Crew:
    def __init__(self, tool):
        self.tool = tool

    def kickoff(self, inputs):
        return Output(inputs["input"] + " / " + self.tool("A-2"))

def run(session):
    tool = asked(session, "lookup_order", lookup_order)
    assert tool.__name__ == "lookup_order" and tool.__doc__ == "Look an order up."
    return dict(graph=run_langgraph(session, Graph(tool)), crew=run_crew(session, Crew(tool)))

main(run)
"""


class AdaptersTest(SessionCase):
    def run_adapters(self, answer):
        script = ADAPTER_SCRIPT.replace("PKG", PACKAGE)
        request = self.request(text="Where is my order?", tools=["lookup_order"])
        return self.session(answer, request=request, argv=[sys.executable, "-c", script])

    def test_asked_tools_run_when_allowed(self) -> None:
        events, code, run = self.run_adapters(self.allow)
        self.assertEqual(code, 0, run.log())
        asks = [e for e in events if e["type"] == "permission_request"]
        self.assertEqual([a["arguments"] for a in asks],
                         [{"order_id": "A-1", "detail": False}, {"order_id": "A-2", "detail": False}])
        self.assertEqual(events[-1], {"type": "result", "output": {
            "graph": "order A-1 ships tomorrow",
            "crew": "Where is my order? / order A-2 ships tomorrow",
        }})

    def test_a_refused_call_is_the_tools_answer(self) -> None:
        def deny(run: Run, event: dict) -> None:
            run.send({"type": "permission", "id": event["id"], "decision": "deny",
                      "reason": "orders are private"})

        events, code, run = self.run_adapters(deny)
        self.assertEqual(code, 0, run.log())
        self.assertFalse([e for e in events if e["type"] == "tool_result"])
        self.assertEqual(events[-1]["output"], {
            "graph": "refused: orders are private",
            "crew": "Where is my order? / refused: orders are private",
        })
