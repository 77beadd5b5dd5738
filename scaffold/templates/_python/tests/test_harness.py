"""The harness protocol (harness.py) over a pipe, as a node runs it, with small agents of the
tests' own and a fake model API served by the test.

Standard library only: `uv run pytest` and `python3 -m unittest discover -s tests -v` both run it.
"""

from __future__ import annotations

import importlib
import json
import signal
import sys
import unittest
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sessions import (
    INSTRUCTIONS,
    JOB,
    MODEL_NAME,
    NAME,
    PACKAGE,
    SESSION_KEY,
    SRC,
    TICKET,
    TIMEOUT,
    TRACEPARENT,
    Run,
    SessionCase,
)


def agent(body: str) -> list[str]:
    """A harness whose run(session) is body, indented; argv to start it."""
    lines = "\n".join("    " + line for line in body.strip().splitlines())
    script = (
        "import os, sys\n"
        f"from {PACKAGE}.harness import Refused, main\n"
        "def notify_team(team, summary):\n"
        "    return f'told the {team} team: {summary}'\n"
        "def run(session):\n"
        f"{lines}\n"
        "main(run)\n"
    )
    return [sys.executable, "-c", script]


NOTIFY = agent("""
try:
    told = session.call_tool('notify_team', {'team': 'billing', 'summary': session.text},
                             notify_team)
except Refused as why:
    return f'refused: {why}'
return told
""")


# A tool that something else runs (a framework's tool loop): asked first, reported after.
ASKED = agent("""
try:
    call = session.ask('notify_team', {'team': 'billing', 'summary': session.text})
except Refused as why:
    return f'refused: {why}'
if session.text == 'fail':
    call.failed(ValueError('no such team'))
else:
    call.done(notify_team(**call.arguments))
call.done('a second report is ignored')
return call.arguments
""")


class ToolCallTest(SessionCase):
    def test_allowed_call_runs_and_reports(self) -> None:
        events, code, run = self.session(self.allow, argv=NOTIFY)
        self.assertEqual(code, 0, run.log())
        self.assertEqual(
            [e["type"] for e in events], ["permission_request", "tool_result", "result"]
        )
        asked, told, result = events
        self.assertEqual(asked["tool"], "notify_team")
        self.assertEqual(asked["arguments"], {"team": "billing", "summary": TICKET})
        self.assertEqual(told["id"], asked["id"])
        self.assertEqual(told["tool"], "notify_team")
        self.assertEqual(told["result"], f"told the billing team: {TICKET}")
        self.assertEqual(result["output"], f"told the billing team: {TICKET}")

    def test_allow_with_changed_arguments(self) -> None:
        def answer(run: Run, event: dict[str, Any]) -> None:
            run.send("this line is not JSON")  # stray input is ignored
            run.send({"type": "something_new", "id": event["id"]})  # so is an unknown type
            run.send({"type": "permission", "id": "p999", "decision": "allow"})  # and a stranger
            run.send(
                {
                    "type": "permission",
                    "id": event["id"],
                    "decision": "allow",
                    "arguments": {"team": "account", "summary": "changed by a hook"},
                }
            )

        events, code, run = self.session(answer, argv=NOTIFY)
        self.assertEqual(code, 0, run.log())
        told = next(e for e in events if e["type"] == "tool_result")
        self.assertEqual(told["result"], "told the account team: changed by a hook")

    def test_denied_call_raises_refused(self) -> None:
        events, code, run = self.session(self.deny("policy says no"), argv=NOTIFY)
        self.assertEqual(code, 0, run.log())
        self.assertEqual([e["type"] for e in events], ["permission_request", "result"])
        self.assertEqual(events[-1]["output"], "refused: policy says no")

    def test_node_closing_stdin_refuses_open_requests(self) -> None:
        events, code, run = self.session(lambda run, event: run.close_stdin(), argv=NOTIFY)
        self.assertEqual(code, 0, run.log())
        self.assertIn("refused: the node closed the session", events[-1]["output"])

    def test_a_call_run_elsewhere_is_asked_and_reported_once(self) -> None:
        def answer(run: Run, event: dict[str, Any]) -> None:
            run.send(
                {
                    "type": "permission",
                    "id": event["id"],
                    "decision": "allow",
                    "arguments": {"team": "account", "summary": "changed"},
                }
            )

        events, code, run = self.session(answer, argv=ASKED)
        self.assertEqual(code, 0, run.log())
        self.assertEqual(
            [e["type"] for e in events], ["permission_request", "tool_result", "result"]
        )
        self.assertEqual(
            events[1],
            {
                "type": "tool_result",
                "id": events[0]["id"],
                "tool": "notify_team",
                "result": "told the account team: changed",
            },
        )
        self.assertEqual(events[2]["output"], {"team": "account", "summary": "changed"})

        events, code, run = self.session(self.allow, request=self.request(text="fail"), argv=ASKED)
        self.assertEqual(events[1]["error"], "ValueError: no such team")
        events, code, run = self.session(self.deny("not now"), argv=ASKED)
        self.assertEqual([e["type"] for e in events], ["permission_request", "result"])
        self.assertEqual(events[-1]["output"], "refused: not now")


class ModelCallTest(SessionCase):
    model_text = "the model's answer"

    def test_anthropic_messages(self) -> None:
        events, code, run = self.session(argv=agent("return session.complete(session.text)"))
        self.assertEqual(code, 0, run.log())
        self.assertEqual(events, [{"type": "result", "output": "the model's answer"}])
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
        self.assertEqual(headers["traceparent"], TRACEPARENT)  # the job's span, as the node says it
        body = call["body"]
        self.assertEqual(body["model"], MODEL_NAME)
        self.assertEqual(body["system"], INSTRUCTIONS)
        self.assertIsInstance(body["max_tokens"], int)
        self.assertEqual(body["messages"], [{"role": "user", "content": TICKET}])

    def test_openai_chat_when_the_record_speaks_it(self) -> None:
        request = self.request(
            model={"name": "gpt-fake", "format": "openai-chat", "record": "openai"}
        )
        events, code, run = self.session(
            request=request, argv=agent("return session.complete(session.text)")
        )
        self.assertEqual(code, 0, run.log())
        self.assertEqual(events, [{"type": "result", "output": "the model's answer"}])
        call = self.api.calls()[0]
        headers = {k.lower(): v for k, v in call["headers"].items()}
        self.assertEqual(call["path"], "/gateway/openai/chat/completions")
        self.assertEqual(headers["authorization"], f"Bearer {SESSION_KEY}")
        self.assertEqual(headers["oz0-job"], JOB)
        self.assertEqual(headers["oz0-agent"], NAME)
        self.assertEqual(call["body"]["model"], "gpt-fake")
        self.assertEqual(
            call["body"]["messages"],
            [
                {"role": "system", "content": INSTRUCTIONS},
                {"role": "user", "content": TICKET},
            ],
        )

    def streamed(self, request: dict[str, Any], argv: list[str]) -> list[dict[str, Any]]:
        """Runs a session against a paced stream: each piece is sent once the one before it
        has reached the live view as a say event."""
        self.api.pieces = ["Sorry ", "about the ", "double ", "charge."]
        self.api.paced = True
        run = self.start(argv)
        run.send(request)
        events = []
        while (event := run.next_event()) is not None:
            events.append(event)
            if event["type"] == "say":
                self.api.release()
            if event["type"] in ("result", "error"):
                break
        self.assertEqual(run.finish(), 0, run.log())
        return events

    def test_streamed_text_reaches_say_as_it_arrives(self) -> None:
        argv = agent("return session.complete(session.text, say=True)")
        for model in (
            {"name": MODEL_NAME, "format": "anthropic-messages", "record": "fake"},
            {"name": "gpt-fake", "format": "openai-chat", "record": "openai"},
        ):
            with self.subTest(model["format"]):
                self.api.requests.clear()
                events = self.streamed(self.request(model=model), argv)
                self.assertEqual(
                    events,
                    [
                        {"type": "say", "text": "Sorry "},
                        {"type": "say", "text": "about the "},
                        {"type": "say", "text": "double "},
                        {"type": "say", "text": "charge."},
                        {"type": "result", "output": "Sorry about the double charge."},
                    ],
                )
                call = self.api.calls()[0]
                self.assertIs(call["body"]["stream"], True)
                self.assertEqual(call["body"]["model"], model["name"])

    def test_stream_yields_pieces_without_saying(self) -> None:
        argv = agent("""
pieces = []
for piece in session.stream(session.text):
    pieces.append(piece)
    session.log(f'piece {len(pieces)}')
return pieces
""")
        self.api.pieces = ["one ", "two"]
        events, code, run = self.session(argv=argv)
        self.assertEqual(code, 0, run.log())
        self.assertEqual([e["type"] for e in events], ["log", "log", "result"])
        self.assertEqual(events[-1]["output"], ["one ", "two"])

    def test_stream_that_fails(self) -> None:
        self.api.status = 429
        events, code, _ = self.session(argv=agent("return session.complete('hi', say=True)"))
        self.assertEqual(code, 1)
        self.assertEqual(len(events), 1)
        self.assertIn("the model API answered 429", events[0]["message"])

    def test_stream_that_ends_with_an_error_event(self) -> None:
        self.api.pieces = ["Sorry ", "about"]
        self.api.stream_error = "overloaded_error"
        argv = agent("return session.complete('hi', say=True)")
        for model in (
            {"name": MODEL_NAME, "format": "anthropic-messages", "record": "fake"},
            {"name": "gpt-fake", "format": "openai-chat", "record": "openai"},
        ):
            with self.subTest(model["format"]):
                events, code, run = self.session(request=self.request(model=model), argv=argv)
                self.assertEqual(code, 1, run.log())
                self.assertEqual([e["type"] for e in events], ["say", "say", "error"])
                self.assertIn(
                    "ended the stream with an error: overloaded_error: the fake model "
                    "API is overloaded",
                    events[-1]["message"],
                )

    def test_stream_cut_short_is_an_error_not_an_answer(self) -> None:
        self.api.pieces = ["Sorry ", "about"]
        self.api.stream_cut = True
        argv = agent("return session.complete('hi', say=True)")
        anthropic = {"name": MODEL_NAME, "format": "anthropic-messages", "record": "fake"}
        openai = {"name": "gpt-fake", "format": "openai-chat", "record": "openai"}
        for model, end in ((anthropic, "message_stop"), (openai, "[DONE]")):
            with self.subTest(model["format"]):
                events, code, run = self.session(request=self.request(model=model), argv=argv)
                self.assertEqual(code, 1, run.log())
                self.assertEqual([e["type"] for e in events], ["say", "say", "error"])
                self.assertIn(
                    f"the model API's stream stopped before the answer's end (no {end})",
                    events[-1]["message"],
                )

    def test_max_steps(self) -> None:
        request = self.request(limits={"max_steps": 1, "timeout_s": 600})
        argv = agent("session.complete('one')\nsession.complete('two')\nreturn 'not reached'")
        events, code, _ = self.session(request=request, argv=argv)
        self.assertEqual(code, 1)
        self.assertEqual(events[-1]["type"], "error")
        self.assertIn("limits.max_steps", events[-1]["message"])
        self.assertIn("1", events[-1]["message"])
        self.assertEqual(len(self.api.calls()), 1)


class ProtocolTest(SessionCase):
    def test_stray_output_does_not_corrupt_stdout(self) -> None:
        argv = agent("""
print('a stray print')
sys.stdout.write('no newline')
os.write(1, b'straight to fd 1\\n')
os.system('echo from a child process')
session.say('still fine')
print(input.__name__, sys.stdin.read())
return {'ok': True, 'text': session.text}
""")
        events, code, run = self.session(argv=argv)
        self.assertEqual(code, 0, run.log())
        self.assertEqual(
            events,
            [
                {"type": "say", "text": "still fine"},
                {"type": "result", "output": {"ok": True, "text": TICKET}},
            ],
        )
        for line in run.stdout:
            self.assertIsInstance(json.loads(line), dict)
        log = run.log()
        for stray in ("a stray print", "no newline", "straight to fd 1", "from a child process"):
            self.assertIn(stray, log)

    def test_failing_agent_ends_with_an_error(self) -> None:
        events, code, run = self.session(argv=agent("raise RuntimeError('the agent broke')"))
        self.assertEqual(code, 1)
        self.assertEqual(events, [{"type": "error", "message": "RuntimeError: the agent broke"}])
        self.assertIn("Traceback", run.log())

    def test_other_protocol_is_refused(self) -> None:
        events, code, _ = self.session(
            request=self.request(protocol=2), argv=agent("return 'not reached'")
        )
        self.assertEqual(code, 1)
        self.assertEqual(len(events), 1)
        self.assertEqual(events[0]["type"], "error")
        self.assertIn("protocol 1", events[0]["message"])
        self.assertEqual(self.api.calls(), [])

    def test_say_names_the_agent_that_speaks_when_it_changes(self) -> None:
        # A framework's sub-agent speaks in the session too: the live view says which did.
        events, code, run = self.session(
            argv=agent("""
session.say('', by='billing')
session.say('A refund. ', by='billing')
session.say('Done. ', by='billing')
session.say('Sorted. ')
session.say('Told. ')
session.say('Again. ', by='billing')
return 'ok'
""")
        )
        self.assertEqual(code, 0, run.log())
        self.assertEqual(
            [e["text"] for e in events if e["type"] == "say"],
            [
                "",
                "[billing] A refund. ",
                "Done. ",
                "\nSorted. ",
                "Told. ",
                "\n[billing] Again. ",
            ],
        )
        events, code, run = self.session(argv=agent("session.say('Sorted. ')\nreturn 'ok'"))
        self.assertEqual(
            events[0], {"type": "say", "text": "Sorted. "}, "the agent's own, as it is"
        )

    def test_sigterm_ends_the_session_whatever_a_library_installed_as_it_loaded(self) -> None:
        # python -m the package with an agent.py whose import installs a SIGTERM handler that
        # holds the process, as CrewAI's telemetry does (it flushes to its server first): a
        # cancel still ends the session at once.
        argv = self.package_with(
            {
                "agent.py": "import signal, time\n"
                "signal.signal(signal.SIGTERM, lambda *_: time.sleep(3600))\n"
                "def run(session):\n"
                "    session.ask('notify_team', {})\n"
            }
        )
        run = self.start(argv)
        run.send(self.request())
        event = run.next_event()
        self.assertEqual((event or {}).get("type"), "permission_request", run.log())
        run.proc.terminate()
        self.assertEqual(run.proc.wait(TIMEOUT), -signal.SIGTERM, run.log())

    def test_first_line_not_a_session(self) -> None:
        events, code, _ = self.session(
            request={"type": "permission", "id": "p1"}, argv=agent("return 'not reached'")
        )
        self.assertEqual(code, 1)
        self.assertEqual(events[0]["type"], "error")
        self.assertIn("protocol 1", events[0]["message"])


class GatewayTLSTest(unittest.TestCase):
    """gateway_tls(): no certificate store for the node's plain-HTTP gateway, and TLS through
    such a client is checked against nothing, so it fails; the system's for an https:// one."""

    def test_plain_http_trusts_nothing_and_still_verifies(self) -> None:
        import ssl

        if str(SRC) not in sys.path:  # unittest run without the package installed (no .venv)
            sys.path.insert(0, str(SRC))
        harness = importlib.import_module(f"{PACKAGE}.harness")
        ctx = harness.gateway_tls("http://127.0.0.1:4747/gateway/anthropic")
        self.assertIsInstance(ctx, ssl.SSLContext)
        self.assertEqual(ctx.verify_mode, ssl.CERT_REQUIRED)
        self.assertTrue(ctx.check_hostname)
        self.assertEqual(ctx.cert_store_stats()["x509_ca"], 0)
        self.assertIs(harness.gateway_tls("https://gateway.example/anthropic"), True)


if __name__ == "__main__":
    unittest.main()
