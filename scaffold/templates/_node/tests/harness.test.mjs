// @ts-check
/**
 * The harness protocol (src/harness.mjs) over a pipe, as a node runs it, with small agents of the
 * tests' own and a fake model API served by the test.
 *
 * Standard library only: `node --test` runs it, with nothing installed.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import { JOB, INSTRUCTIONS, MODEL_NAME, NAME, SESSION_KEY, TICKET, Sessions, agent, allow, deny, says } from "./sessions.mjs";

const NOTIFY = agent(`
  try {
    return await session.callTool("notify_team", { team: "billing", summary: session.text }, notifyTeam);
  } catch (err) {
    if (err instanceof Refused) return \`refused: \${err.reason}\`;
    throw err;
  }
`);

// A tool that something else runs (a framework's tool loop): asked first, reported after.
const ASKED = agent(`
  let call;
  try {
    call = await session.ask("notify_team", { team: "billing", summary: session.text });
  } catch (err) {
    if (err instanceof Refused) return \`refused: \${err.reason}\`;
    throw err;
  }
  if (session.text === "fail") call.failed(new TypeError("no such team"));
  else call.done(notifyTeam(call.arguments));
  call.done("a second report is ignored");
  return call.arguments;
`);

test("an allowed call runs and reports its result", async (t) => {
  const s = await Sessions.start(t);
  const { events, code, run } = await s.session({ answer: allow, argv: NOTIFY });
  assert.equal(code, 0, await run.log());
  assert.deepEqual(events.map((e) => e.type), ["permission_request", "tool_result", "result"]);
  const [asked, told, result] = events;
  assert.deepEqual(asked, { type: "permission_request", id: "p1", tool: "notify_team", arguments: { team: "billing", summary: TICKET } });
  assert.deepEqual(told, { type: "tool_result", id: "p1", tool: "notify_team", result: `told the billing team: ${TICKET}` });
  assert.deepEqual(result, { type: "result", output: `told the billing team: ${TICKET}` });
});

test("an allowed call runs with the arguments the job allowed; stray input is ignored", async (t) => {
  const s = await Sessions.start(t);
  const { events, code, run } = await s.session({
    argv: NOTIFY,
    answer: (run, event) => {
      run.send("this line is not JSON");
      run.send({ type: "something_new", id: event.id });
      run.send({ type: "permission", id: "p999", decision: "allow" });
      run.send({ type: "permission", id: event.id, decision: "allow", arguments: { team: "account", summary: "changed by a hook" } });
    },
  });
  assert.equal(code, 0, await run.log());
  assert.equal(events.find((e) => e.type === "tool_result")?.result, "told the account team: changed by a hook");
  const log = await run.log();
  assert.match(log, /ignored a line on stdin that is not JSON/);
  assert.match(log, /ignored a permission answer for "p999"/);
});

test("a denied call rejects with Refused and its reason", async (t) => {
  const s = await Sessions.start(t);
  const { events, code, run } = await s.session({ answer: deny("policy says no"), argv: NOTIFY });
  assert.equal(code, 0, await run.log());
  assert.deepEqual(events.map((e) => e.type), ["permission_request", "result"]);
  assert.equal(events[1].output, "refused: policy says no");
});

test("the node closing stdin refuses the open requests", async (t) => {
  const s = await Sessions.start(t);
  const { events, code, run } = await s.session({ answer: (run) => run.closeStdin(), argv: NOTIFY });
  assert.equal(code, 0, await run.log());
  assert.equal(events.at(-1)?.output, "refused: the node closed the session before answering");
});

test("a call something else runs is asked first and reported once", async (t) => {
  const s = await Sessions.start(t);
  let { events, code, run } = await s.session({
    argv: ASKED,
    answer: (run, event) => run.send({ type: "permission", id: event.id, decision: "allow", arguments: { team: "account", summary: "changed" } }),
  });
  assert.equal(code, 0, await run.log());
  assert.deepEqual(events, [
    { type: "permission_request", id: "p1", tool: "notify_team", arguments: { team: "billing", summary: TICKET } },
    { type: "tool_result", id: "p1", tool: "notify_team", result: "told the account team: changed" },
    { type: "result", output: { team: "account", summary: "changed" } },
  ]);

  ({ events } = await s.session({ answer: allow, argv: ASKED, request: s.request({ text: "fail" }) }));
  assert.equal(events[1].error, "TypeError: no such team");
  ({ events } = await s.session({ answer: deny("not now"), argv: ASKED }));
  assert.deepEqual(events.map((e) => e.type), ["permission_request", "result"]);
  assert.equal(events[1].output, "refused: not now");
});

test("a call's arguments are asked as JSON holds them; arguments that are not an object are refused", async (t) => {
  const s = await Sessions.start(t);
  const argv = agent(`
    try {
      await session.ask("notify_team", ["billing"]);
    } catch (err) {
      session.say(\`\${err.name}: \${err.message}\`);
    }
    const call = await session.ask("notify_team", { count: 10n ** 20n, when: new Date(0), skip: undefined });
    return call.arguments;
  `);
  const { events, code, run } = await s.session({ answer: allow, argv });
  assert.equal(code, 0, await run.log());
  const when = "1970-01-01T00:00:00.000Z";
  assert.deepEqual(events, [
    { type: "say", text: "TypeError: the arguments of a call of notify_team must be an object, not an array" },
    { type: "permission_request", id: "p1", tool: "notify_team", arguments: { count: "100000000000000000000", when } },
    { type: "result", output: { count: "100000000000000000000", when } },
  ]);
});

test("a tool that fails is reported and its error goes on", async (t) => {
  const s = await Sessions.start(t);
  const argv = agent(`
    try {
      await session.callTool("notify_team", {}, () => { throw new RangeError("the team is away"); });
    } catch (err) {
      return \`caught \${err.name}\`;
    }
  `);
  const { events, code, run } = await s.session({ answer: allow, argv });
  assert.equal(code, 0, await run.log());
  assert.deepEqual(events.slice(1), [
    { type: "tool_result", id: "p1", tool: "notify_team", error: "RangeError: the team is away" },
    { type: "result", output: "caught RangeError" },
  ]);
});

test("a model call in Anthropic's Messages format", async (t) => {
  const s = await Sessions.start(t, { modelText: "the model's answer" });
  const { events, code, run } = await s.session({ argv: agent("return session.complete(session.text);") });
  assert.equal(code, 0, await run.log());
  assert.deepEqual(events, [{ type: "result", output: "the model's answer" }]);
  const calls = s.api.calls();
  assert.equal(calls.length, 1);
  const [{ path, headers, body }] = calls;
  assert.equal(path, "/gateway/anthropic/v1/messages");
  assert.equal(headers["x-api-key"], SESSION_KEY);
  assert.equal(headers["anthropic-version"], "2023-06-01");
  assert.equal(headers["content-type"], "application/json");
  assert.equal(headers["oz0-job"], JOB);
  assert.equal(headers["oz0-agent"], NAME);
  assert.equal(body.model, MODEL_NAME);
  assert.equal(body.system, INSTRUCTIONS);
  assert.equal(typeof body.max_tokens, "number");
  assert.deepEqual(body.messages, [{ role: "user", content: TICKET }]);
});

test("a model call in OpenAI's Chat Completions format when the record speaks it", async (t) => {
  const s = await Sessions.start(t, { modelText: "the model's answer" });
  const request = s.request({ model: { name: "gpt-fake", format: "openai-chat", record: "openai" } });
  const { events, code, run } = await s.session({ request, argv: agent("return session.complete(session.text);") });
  assert.equal(code, 0, await run.log());
  assert.deepEqual(events, [{ type: "result", output: "the model's answer" }]);
  const [{ path, headers, body }] = s.api.calls();
  assert.equal(path, "/gateway/openai/chat/completions");
  assert.equal(headers.authorization, `Bearer ${SESSION_KEY}`);
  assert.equal(headers["oz0-job"], JOB);
  assert.equal(headers["oz0-agent"], NAME);
  assert.equal(body.model, "gpt-fake");
  assert.deepEqual(body.messages, [{ role: "system", content: INSTRUCTIONS }, { role: "user", content: TICKET }]);
});

test("limits.max_steps: the call past it is not made", async (t) => {
  const s = await Sessions.start(t);
  const request = s.request({ limits: { max_steps: 1, timeout_s: 600 } });
  const argv = agent("await session.complete('one'); await session.complete('two'); return 'not reached';");
  const { events, code } = await s.session({ request, argv });
  assert.equal(code, 1);
  assert.equal(events.length, 1);
  assert.equal(events[0].type, "error");
  assert.match(events[0].message, /^StepLimitExceeded: limits\.max_steps reached: this session may make 1 model call and has made 1$/);
  assert.equal(s.api.calls().length, 1);
});

test("a model API error is a ModelError with the provider's message", async (t) => {
  const s = await Sessions.start(t);
  s.api.status = 429;
  const argv = agent("try { await session.complete('x'); } catch (err) { return [err.name, err.status, err.message]; }");
  const { events, code, run } = await s.session({ argv });
  assert.equal(code, 0, await run.log());
  assert.deepEqual(events[0].output, ["ModelError", 429, "the model API answered 429: rate_limit_error: the fake model API answers 429"]);
});

test("stray output does not reach stdout", async (t) => {
  const s = await Sessions.start(t);
  const argv = agent(`
    console.log("a stray console.log");
    console.info("a stray console.info");
    console.dir({ stray: "console.dir" });
    process.stdout.write("no newline");
    session.say("still fine");
    session.log("to the trace", "warning");
    return { ok: true, text: session.text, nothing: undefined };
  `);
  const { events, code, run } = await s.session({ argv });
  assert.equal(code, 0, await run.log());
  assert.deepEqual(events, [
    { type: "say", text: "still fine" },
    { type: "log", level: "warning", message: "to the trace" },
    { type: "result", output: { ok: true, text: TICKET } },
  ]);
  const log = await run.log();
  for (const stray of ["a stray console.log", "a stray console.info", "console.dir", "no newline"]) assert.ok(log.includes(stray), stray + log);
});

test("a second agent's text starts a line of its own, under its name", async (t) => {
  const s = await Sessions.start(t);
  const { events, code, run } = await s.session({
    argv: agent(`
      session.say("");
      session.say("Over to billing.");
      session.say("Charged ", { by: "billing" });
      session.say("twice.", { by: "billing" });
      session.say("Done.");
      return "ok";
    `),
  });
  assert.equal(code, 0, await run.log());
  assert.equal(says(events), "Over to billing.\n[billing] Charged twice.\nDone.");
});

test("what JSON cannot hold is sent as text; nothing is null", async (t) => {
  const s = await Sessions.start(t);
  let { events } = await s.session({ argv: agent("return 10n ** 20n;") });
  assert.deepEqual(events, [{ type: "result", output: "100000000000000000000" }]);
  ({ events } = await s.session({ argv: agent("return undefined;") }));
  assert.deepEqual(events, [{ type: "result", output: null }]);
  ({ events } = await s.session({ argv: agent("session.say('line\\u2028separator'); return 'done';") }));
  assert.equal(events[0].text, "line\u2028separator");
  assert.match(s.runs.at(-1)?.stdout[0] ?? "", /line\\u2028separator/);
});

test("a failing agent ends with an error, its stack in the log", async (t) => {
  const s = await Sessions.start(t);
  const { events, code, run } = await s.session({ argv: agent("throw new RangeError('the agent broke');") });
  assert.equal(code, 1);
  assert.deepEqual(events, [{ type: "error", message: "RangeError: the agent broke" }]);
  assert.match(await run.log(), /RangeError: the agent broke\n\s+at /);
});

test("a rejection nobody awaits ends the session with an error", async (t) => {
  const s = await Sessions.start(t);
  const argv = agent("Promise.reject(new Error('lost in a callback')); return new Promise(() => {});");
  const { events, code } = await s.session({ argv });
  assert.equal(code, 1);
  assert.deepEqual(events, [{ type: "error", message: "Error: lost in a callback" }]);
});

test("the process exits after its last line, whatever it left open", async (t) => {
  const s = await Sessions.start(t, { modelText: "ok" });
  // A timer, a pending promise and the model client's keep-alive connection would hold Node.
  const argv = agent("setInterval(() => {}, 1000); new Promise(() => {}); return session.complete('hi');");
  const { events, code, run } = await s.session({ argv });
  assert.equal(code, 0, await run.log());
  assert.deepEqual(events, [{ type: "result", output: "ok" }]);
});

test("SIGTERM ends the session at once", async (t) => {
  const s = await Sessions.start(t);
  const run = s.start(agent("session.say('waiting'); return new Promise(() => {});"));
  run.send(s.request());
  assert.deepEqual(await run.nextEvent(), { type: "say", text: "waiting" });
  run.proc.kill("SIGTERM");
  assert.notEqual(await run.exit(), 0);
});

test("a session request of another protocol is refused", async (t) => {
  const s = await Sessions.start(t);
  const { events, code } = await s.session({ request: s.request({ protocol: 2 }), argv: agent("return 'not reached';") });
  assert.equal(code, 1);
  assert.deepEqual(events, [{ type: "error", message: "the session asks for protocol 2: this harness speaks protocol 1" }]);
  assert.deepEqual(s.api.calls(), []);
});

test("a first line that is not a session request is refused", async (t) => {
  const s = await Sessions.start(t);
  let { events, code } = await s.session({ request: { type: "permission", id: "p1" }, argv: agent("return 'not reached';") });
  assert.equal(code, 1);
  assert.deepEqual(events, [{ type: "error", message: "the first line is not a session request: this harness speaks protocol 1" }]);

  const run = s.start(agent("return 'not reached';"));
  run.closeStdin();
  assert.deepEqual(await run.nextEvent(), { type: "error", message: "stdin closed before the session request: this harness speaks protocol 1" });
  assert.equal(await run.finish(), 1);
});

test("a Session made outside main() writes to stderr and refuses tool calls", async (t) => {
  const s = await Sessions.start(t);
  const script = `
    import { Session, Refused } from ${JSON.stringify(new URL("../src/harness.mjs", import.meta.url).href)};
    const session = new Session({ text: "hello", input: "hello", model: { name: "m" } });
    session.say("to stderr");
    try { await session.callTool("notify_team", {}, () => "ran"); } catch (err) { console.error(err instanceof Refused, err.message); }
    console.error(session.model.format, session.text, JSON.stringify(session.limits));
  `;
  const run = s.start([process.execPath, "--input-type=module", "-e", script]);
  run.closeStdin();
  assert.equal(await run.exit(), 0);
  assert.equal(await run.nextEvent(), null);
  const log = await run.log();
  assert.match(log, /\{"type":"say","text":"to stderr"\}/);
  assert.match(log, /true no node to ask: this session does not run under main\(\)/);
  assert.match(log, /anthropic-messages hello \{\}/);
});
