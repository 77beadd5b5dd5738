// @ts-check
/**
 * What the tests share: the harness run over a pipe as a node runs it, and a fake model API.
 *
 * Standard library only. Not a test file itself (node --test runs tests/*.test.mjs): they import it.
 */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, mkdirSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";

export const NAME = "{{.Name}}";
export const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
/** The harness's entry, as the manifest runs it. */
export const MAIN = join(ROOT, "src", "main.mjs");
export const HARNESS_URL = pathToFileURL(join(ROOT, "src", "harness.mjs")).href;
export const INSTRUCTIONS = readFileSync(join(ROOT, "prompts", `${NAME}.md`), "utf8");

export const TICKET = "I was charged twice for my order";
export const MODEL_NAME = "claude-fake-1";
export const SESSION_KEY = "oz0s_test_0123456789abcdef";
export const JOB = "job_test_1";

/**
 * Milliseconds for any one wait, a bound on failure only: a broken harness fails the test instead
 * of hanging it. Generous: loading the framework on a busy machine takes a while (10 s was too
 * short at a load of 40 on two cores).
 */
export const TIMEOUT = 120_000;

/**
 * @typedef {Record<string, any>} Message a JSON object of the protocol
 * @typedef { {path: string, headers: Record<string, string | string[] | undefined>, body: any}} Call
 *   a request the fake model API received
 * @typedef {(run: Run, event: Message) => void} Answer answers a permission request
 * @typedef { {text: string, calls: [string, Record<string, unknown>][]}} Turn what the model says:
 *   its text, and the tools it calls with their arguments
 * @typedef {(body: Message, answers: string[], offered: string[]) => Turn} Script
 */

/**
 * Anthropic's Messages API and OpenAI's Chat Completions, streamed (server-sent events, as the
 * SDKs ask for with stream: true) or not, scripted: records every request and answers `text`.
 * With `toolArguments` set, it answers as a model that uses tools: a request that offers tools
 * gets a call of the first, with those arguments; with `toolCalls` set, one turn calling each of
 * those [name, arguments]. A request that ends with the tools' answers gets "The tool answered:
 * <the answers, joined by "; ">". With `script` set, it decides every answer: script(body,
 * answers, offered) returns the turn from the request's body, the tools' answers it ends with
 * and the names of the tools it offers (a test of an agent that hands over to another, say).
 * With `status` set, it answers that HTTP error instead. Streamed text comes a word at a time.
 */
export class FakeModelAPI {
  constructor(text = "") {
    this.text = text;
    /** @type {Record<string, unknown> | null} */
    this.toolArguments = null;
    /** @type {[string, Record<string, unknown>][]} */
    this.toolCalls = [];
    /** @type {Script | null} */
    this.script = null;
    this.status = 0;
    /** @type {Call[]} */
    this.requests = [];
    this.server = createServer((req, res) => {
      /** @type {Buffer[]} */
      const chunks = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => this.#serve(req.url ?? "", req.headers, Buffer.concat(chunks).toString("utf8"), res));
    });
    this.anthropicURL = "";
    this.openaiURL = "";
  }

  /** Listens on a free loopback port. */
  async start() {
    await new Promise((resolve) => this.server.listen(0, "127.0.0.1", () => resolve(undefined)));
    const address = /** @type {import("node:net").AddressInfo} */ (this.server.address());
    // Base URLs with a path and a trailing slash, like the gateway's.
    this.anthropicURL = `http://127.0.0.1:${address.port}/gateway/anthropic/`;
    this.openaiURL = `http://127.0.0.1:${address.port}/gateway/openai/`;
    return this;
  }

  close() {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve(undefined)));
  }

  /** @returns {Call[]} */
  calls() {
    return [...this.requests];
  }

  /**
   * @param {string} path
   * @param {import("node:http").IncomingHttpHeaders} headers
   * @param {string} raw
   * @param {import("node:http").ServerResponse} res
   */
  #serve(path, headers, raw, res) {
    let body;
    try {
      body = JSON.parse(raw);
    } catch {
      body = null;
    }
    this.requests.push({ path, headers: { ...headers }, body });
    if (typeof body !== "object" || body === null) body = {};
    if (this.status) {
      const type = this.status === 429 ? "rate_limit_error" : "api_error";
      // What the gateway says past a limit: do not retry.
      return json(res, this.status, { type: "error", error: { type, message: `the fake model API answers ${this.status}` } },
        { "x-should-retry": "false" });
    }
    if (path.endsWith("/v1/messages")) {
      const answer = this.anthropic(body);
      return body.stream ? sse(res, anthropicEvents(answer)) : json(res, 200, answer);
    }
    if (path.endsWith("/chat/completions")) {
      const answer = this.openai(body);
      return body.stream ? sse(res, openaiEvents(answer, body.stream_options?.include_usage === true)) : json(res, 200, answer);
    }
    json(res, 404, { type: "error", error: { type: "not_found_error", message: `no route ${path}` } });
  }

  /**
   * What the model says to a request: its text and tool calls. answers are the tools' answers the
   * request ends with; offered the names of the tools it offers.
   * @param {Message} body
   * @param {string[]} answers
   * @param {string[]} offered
   * @returns {Turn}
   */
  turn(body, answers, offered) {
    if (this.script) return this.script(body, answers, offered);
    const args = this.toolArguments;
    if (args === null && !this.toolCalls.length) return { text: this.text, calls: [] };
    if (answers.length) return { text: "The tool answered: " + answers.join("; "), calls: [] };
    if (this.toolCalls.length) return { text: "", calls: [...this.toolCalls] };
    if (offered.length && args !== null) return { text: "", calls: [[offered[0], args]] };
    return { text: this.text, calls: [] };
  }

  /** The answer to an Anthropic request. @param {Message} body */
  anthropic(body) {
    const messages = Array.isArray(body.messages) && body.messages.length ? body.messages : [{}];
    const last = messages[messages.length - 1].content;
    const answers = Array.isArray(last) ? last.filter((b) => b?.type === "tool_result").map(textOf) : [];
    const offered = (body.tools ?? []).map((/** @type {Message} */ t) => String(t.name));
    const { text, calls } = this.turn(body, answers, offered);
    /** @type {Message[]} */
    const content = calls.length ? [] : [{ type: "text", text }];
    calls.forEach(([name, input], i) => content.push({ type: "tool_use", id: `toolu_fake${i + 1}`, name, input }));
    return {
      id: "msg_fake_1", type: "message", role: "assistant", model: body.model, content,
      stop_reason: calls.length ? "tool_use" : "end_turn", stop_sequence: null, usage: { input_tokens: 42, output_tokens: 17 },
    };
  }

  /** The answer to an OpenAI request. @param {Message} body */
  openai(body) {
    /** @type {string[]} */
    const answers = [];
    for (const message of [...(body.messages ?? [])].reverse()) {
      if (message?.role !== "tool") break;
      answers.unshift(textOf(message));
    }
    const offered = (body.tools ?? []).map((/** @type {Message} */ t) => String(t.function?.name));
    const { text, calls } = this.turn(body, answers, offered);
    /** @type {Message} */
    const message = { role: "assistant", content: calls.length ? null : text };
    if (calls.length) {
      message.tool_calls = calls.map(([name, args], i) => ({ id: `call_fake${i + 1}`, type: "function", function: { name, arguments: JSON.stringify(args) } }));
    }
    return {
      id: "chatcmpl-fake1", object: "chat.completion", created: 0, model: body.model,
      choices: [{ index: 0, finish_reason: calls.length ? "tool_calls" : "stop", message }],
      usage: { prompt_tokens: 42, completion_tokens: 17, total_tokens: 59 },
    };
  }
}

/**
 * The text of a tool result: Anthropic's tool_result block or OpenAI's tool message.
 * @param {Message} block
 */
function textOf(block) {
  const content = block.content;
  if (Array.isArray(content)) return content.map((b) => String(b?.text ?? "")).join("");
  return content === null || content === undefined ? "" : String(content);
}

/** Text in pieces of a word and its space, as a model streams it. @param {string} text */
function words(text) {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

/**
 * @param {import("node:http").ServerResponse} res
 * @param {number} status
 * @param {unknown} body
 * @param {Record<string, string>} [headers]
 */
function json(res, status, body, headers = {}) {
  const data = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(data), ...headers });
  res.end(data);
}

/**
 * @param {import("node:http").ServerResponse} res
 * @param { {event?: string, data: unknown}[]} events
 */
function sse(res, events) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (const e of events) {
    res.write((e.event ? `event: ${e.event}\n` : "") + `data: ${typeof e.data === "string" ? e.data : JSON.stringify(e.data)}\n\n`);
  }
  res.end();
}

/**
 * An Anthropic answer as the API streams it: message_start, each content block (start, deltas,
 * stop), message_delta with the stop reason, message_stop.
 * @param {Message} answer
 */
function anthropicEvents(answer) {
  /** @type { {event: string, data: unknown}[]} */
  const events = [];
  const add = (/** @type {string} */ event, /** @type {Message} */ data) => events.push({ event, data: { type: event, ...data } });
  add("message_start", { message: { ...answer, content: [], stop_reason: null, usage: { input_tokens: 42, output_tokens: 1 } } });
  answer.content.forEach((/** @type {Message} */ block, /** @type {number} */ index) => {
    if (block.type === "text") {
      add("content_block_start", { index, content_block: { type: "text", text: "" } });
      for (const piece of words(block.text)) add("content_block_delta", { index, delta: { type: "text_delta", text: piece } });
    } else {
      add("content_block_start", { index, content_block: { ...block, input: {} } });
      add("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) } });
    }
    add("content_block_stop", { index });
  });
  add("message_delta", { delta: { stop_reason: answer.stop_reason, stop_sequence: null }, usage: { output_tokens: 17 } });
  add("message_stop", {});
  return events;
}

/**
 * An OpenAI answer as Chat Completions streams it: the role, the content in pieces, each tool
 * call, the finish reason; with include_usage, a chunk with the usage; then [DONE].
 * @param {Message} answer
 * @param {boolean} includeUsage
 */
function openaiEvents(answer, includeUsage) {
  const { message, finish_reason } = answer.choices[0];
  /** @type { {data: unknown}[]} */
  const events = [];
  const chunk = (/** @type {Message} */ delta, /** @type {string | null} */ finish = null) => events.push({
    data: { id: answer.id, object: "chat.completion.chunk", created: 0, model: answer.model, choices: [{ index: 0, delta, finish_reason: finish }] },
  });
  chunk({ role: "assistant", content: message.content === null ? null : "" });
  for (const piece of words(message.content ?? "")) chunk({ content: piece });
  (message.tool_calls ?? []).forEach((/** @type {Message} */ call, /** @type {number} */ index) => {
    chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } }] });
    chunk({ tool_calls: [{ index, function: { arguments: call.function.arguments } }] });
  });
  chunk({}, finish_reason);
  if (includeUsage) {
    events.push({ data: { id: answer.id, object: "chat.completion.chunk", created: 0, model: answer.model, choices: [], usage: answer.usage } });
  }
  events.push({ data: "[DONE]" });
  return events;
}

/** One harness process, started as a node starts it. */
export class Run {
  /**
   * @param {string[]} argv
   * @param {Record<string, string>} env
   * @param {string} cwd
   */
  constructor(argv, env, cwd) {
    this.proc = spawn(argv[0], argv.slice(1), { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
    /** @type {string[]} the lines of stdout read so far */
    this.stdout = [];
    /** @type {string[]} */
    this.stderr = [];
    /** @type {(string | null)[]} lines not yet taken; null at EOF */
    this.pending = [];
    /** @type {((line: string | null) => void) | null} */
    this.waiter = null;
    createInterface({ input: this.proc.stdout }).on("line", (line) => this.#push(line)).on("close", () => this.#push(null));
    this.proc.stderr.setEncoding("utf8").on("data", (chunk) => this.stderr.push(chunk));
    this.stderrClosed = new Promise((resolve) => this.proc.stderr.on("close", resolve));
    /** @type {Promise<number | string>} the exit code, or the signal that ended the process */
    this.exited = new Promise((resolve) => this.proc.on("close", (code, signal) => resolve(code ?? String(signal))));
    this.proc.stdin.on("error", () => {}); // the harness may be gone before a write: its exit says why
  }

  /** @param {string | null} line */
  #push(line) {
    if (this.waiter) {
      const waiter = this.waiter;
      this.waiter = null;
      waiter(line);
    } else {
      this.pending.push(line);
    }
  }

  /** @param {Message | string} message */
  send(message) {
    this.proc.stdin.write((typeof message === "string" ? message : JSON.stringify(message)) + "\n");
  }

  closeStdin() {
    this.proc.stdin.end();
  }

  /**
   * The next line of stdout, parsed; null at EOF.
   * @returns {Promise<Message | null>}
   */
  async nextEvent() {
    const line = this.pending.length
      ? this.pending.shift()
      : await within(new Promise((resolve) => { this.waiter = resolve; }), `no line from the harness in ${TIMEOUT} ms`, this);
    if (line === null || line === undefined) return null;
    this.stdout.push(line);
    let event;
    try {
      event = JSON.parse(line);
    } catch {
      assert.fail(`stdout line is not JSON: ${JSON.stringify(line)}${await this.log()}`);
    }
    assert.ok(typeof event === "object" && event !== null && !Array.isArray(event), `not a JSON object: ${line}`);
    return event;
  }

  /** Resolves to the exit code, or the signal that ended the process, once it has exited. */
  exit() {
    return within(this.exited, "the harness did not exit", this);
  }

  /** Closes stdin as a node does after the last line; resolves to the exit code. */
  async finish() {
    this.closeStdin();
    const code = await within(this.exited, "the harness did not exit after its last line", this);
    for (let event = await this.nextEvent(); event !== null; event = await this.nextEvent()) {
      assert.fail(`a line after the last: ${JSON.stringify(event)}`);
    }
    return code;
  }

  /** The harness's stderr so far; all of it once the process has exited. */
  async log() {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) await this.stderrClosed;
    return "\nstderr:\n" + this.stderr.join("");
  }

  kill() {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill("SIGKILL");
    return this.exited;
  }
}

/**
 * p, or a failure with message (and the harness's log) after TIMEOUT.
 * @template T
 * @param {Promise<T>} p
 * @param {string} message
 * @param {Run} run
 * @returns {Promise<T>}
 */
async function within(p, message, run) {
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => run.log().then((log) => reject(new Error(message + log))), TIMEOUT);
  });
  try {
    return /** @type {T} */ (await Promise.race([p, late]));
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Sessions of the harness as a node runs them, against a fake model API; everything it starts
 * is stopped when the test ends.
 */
export class Sessions {
  /**
   * @param {import("node:test").TestContext} t
   * @param { {modelText?: string}} [options]
   * @returns {Promise<Sessions>}
   */
  static async start(t, { modelText = "" } = {}) {
    const api = await new FakeModelAPI(modelText).start();
    const tmp = mkdtempSync(join(tmpdir(), "oz0-harness-test-"));
    const sessions = new Sessions(api, tmp);
    t.after(async () => {
      await Promise.all(sessions.runs.map((r) => r.kill()));
      await api.close();
      rmSync(tmp, { recursive: true, force: true });
    });
    return sessions;
  }

  /**
   * @param {FakeModelAPI} api
   * @param {string} tmp
   */
  constructor(api, tmp) {
    this.api = api;
    this.workdir = join(tmp, "work");
    this.stateDir = join(tmp, "state");
    mkdirSync(this.workdir);
    mkdirSync(this.stateDir);
    /** @type {Run[]} */
    this.runs = [];
  }

  /** The session's environment, as a node sets it. @returns {Record<string, string>} */
  env() {
    const headers = `Oz0-Job: ${JOB}\nOz0-Agent: ${NAME}`;
    return {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: this.stateDir,
      LANG: "C.UTF-8",
      TMPDIR: this.stateDir,
      PYTHONUNBUFFERED: "1",
      ANTHROPIC_BASE_URL: this.api.anthropicURL,
      ANTHROPIC_API_KEY: SESSION_KEY,
      OPENAI_BASE_URL: this.api.openaiURL,
      OPENAI_API_KEY: SESSION_KEY,
      ANTHROPIC_CUSTOM_HEADERS: headers,
      OPENAI_CUSTOM_HEADERS: headers,
      OZ0_JOB: JOB,
      OZ0_AGENT: NAME,
    };
  }

  /**
   * A session request, with changes.
   * @param {Message} [changes]
   * @returns {Message}
   */
  request(changes = {}) {
    return {
      type: "session",
      protocol: 1,
      job: JOB,
      agent: NAME,
      harness: NAME,
      text: TICKET,
      input: TICKET,
      instructions: INSTRUCTIONS,
      model: { name: MODEL_NAME, format: "anthropic-messages", record: "fake" },
      tools: ["notify_team"],
      limits: { max_steps: 10, timeout_s: 600 },
      workdir: this.workdir,
      state_dir: this.stateDir,
      options: {},
      ...changes,
    };
  }

  /** Starts the harness: node src/main.mjs, or argv. @param {string[]} [argv] */
  start(argv) {
    const run = new Run(argv ?? [process.execPath, MAIN], this.env(), this.workdir);
    this.runs.push(run);
    return run;
  }

  /**
   * Runs one session to its last line. answer(run, permission_request) answers each permission
   * request.
   * @param { {answer?: Answer, request?: Message, argv?: string[]}} [options]
   * @returns {Promise<{events: Message[], code: number | string, run: Run}>}
   */
  async session({ answer, request, argv } = {}) {
    const run = this.start(argv);
    run.send(request ?? this.request());
    /** @type {Message[]} */
    const events = [];
    for (;;) {
      const event = await run.nextEvent();
      if (event === null) assert.fail(`stdout closed before a result or an error${await run.log()}`);
      events.push(event);
      if (event.type === "permission_request") {
        assert.ok(answer, `unexpected permission request ${JSON.stringify(event)}`);
        answer(run, event);
      }
      if (event.type === "result" || event.type === "error") break;
    }
    return { events, code: await run.finish(), run };
  }
}

/** Allows the call with the arguments asked. @type {Answer} */
export function allow(run, event) {
  run.send({ type: "permission", id: event.id, decision: "allow", arguments: event.arguments });
}

/** Denies every call, with reason. @param {string} reason @returns {Answer} */
export function deny(reason) {
  return (run, event) => run.send({ type: "permission", id: event.id, decision: "deny", reason });
}

/** Everything the session said, joined. @param {Message[]} events */
export function says(events) {
  return events.filter((e) => e.type === "say").map((e) => e.text).join("");
}

/**
 * An agent of a test's own: a harness whose run(session) is body (an async function's body, with
 * Refused, ToolCall, ModelError, StepLimitExceeded and notifyTeam in scope); argv to start it.
 * @param {string} body
 * @returns {string[]}
 */
export function agent(body) {
  const script = `
import { main, Refused, ModelError, StepLimitExceeded } from ${JSON.stringify(HARNESS_URL)};
const notifyTeam = ({ team, summary }) => \`told the \${team} team: \${summary}\`;
main(async (session) => {
${body}
});
`;
  return [process.execPath, "--input-type=module", "-e", script];
}
