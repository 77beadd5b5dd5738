// @ts-check
/**
 * The harness side of the oz0 harness protocol, version 1, for Node (18 or later), with the
 * standard library only.
 *
 * One process per job. The node starts `node src/main.mjs`, writes the session request as the
 * first line of stdin and reads events from stdout, one JSON object per line:
 *
 *     node -> harness (stdin)   {"type": "session", "protocol": 1, ...}     the first line
 *                               {"type": "permission", "id": "p1", "decision": "allow", ...}
 *     harness -> node (stdout)  say, log, permission_request, tool_result, and last of all
 *                               exactly one result or error
 *
 * stdout carries the protocol and nothing else. Node cannot move file descriptor 1 as Python and
 * Go do, so main() keeps stdout's writer for the protocol and points `process.stdout.write` (and
 * so console.log, console.info, console.dir and a framework's printer) at stderr, the job's log,
 * before your code runs. What it cannot catch is a write to file descriptor 1 itself:
 * `fs.writeSync(1, ...)`, or a child process started with inherited stdio. Start children with
 * `stdio: ["ignore", "pipe", "inherit"]` (or pipe their stdout yourself). stdin is the node's
 * too: leave process.stdin alone.
 *
 * You should not need to edit this file: your agent is run(session) in agent.mjs.
 */

import { createInterface } from "node:readline";

/** The protocol versions this harness speaks. */
export const PROTOCOLS = Object.freeze([1]);

/** The longest line the protocol allows, in bytes, its newline included. */
export const MAX_LINE = 8 * 1024 * 1024;

/** How long one model call of complete() may take, in milliseconds. */
export const MODEL_TIMEOUT_MS = 600_000;

export const ANTHROPIC_VERSION = "2023-06-01";

/** The job refused a tool call: a hook, the default-deny policy or a person said no. */
export class Refused extends Error {
  /** @param {string} reason why, as the job said it */
  constructor(reason) {
    super(reason);
    this.name = "Refused";
    this.reason = reason;
  }
}

/** A model call failed: the gateway or the provider answered with an error, or no answer. */
export class ModelError extends Error {
  /**
   * @param {string} message
   * @param {number} [status] the HTTP status of the answer, when there was one
   */
  constructor(message, status) {
    super(message);
    this.name = "ModelError";
    this.status = status;
  }
}

/** The session has made limits.max_steps model calls; the call was not made. */
export class StepLimitExceeded extends ModelError {
  /** @param {string} message */
  constructor(message) {
    super(message, 429);
    this.name = "StepLimitExceeded";
  }
}

/** The node sent something this harness cannot work with, or a line would break the protocol. */
export class ProtocolError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = "ProtocolError";
  }
}

/**
 * @typedef {object} Model the session's model: its record serves it in one format
 * @property {string} name the model's name, as the model API takes it
 * @property {string} format "anthropic-messages" (Anthropic's Messages API) or "openai-chat"
 *   (OpenAI's Chat Completions)
 * @property {string} record the provider record that serves it ("fake" in dev without keys)
 */

/**
 * @typedef {object} Limits the agent's limits
 * @property {number} [max_steps] the most model calls a session makes; 0 or none is no limit
 * @property {number} [timeout_s] the session's active time, in seconds; 0 or none is no limit
 */

/**
 * @typedef { {role: string, content: unknown} & Record<string, unknown>} ChatMessage
 *   a message of a model call, in the format of the session's model record
 */

/** @typedef {"debug" | "info" | "warning" | "error"} Level */

/** A line for the job's log (stderr): the harness's own diagnostics. */
function logLine(/** @type {string} */ message) {
  try {
    process.stderr.write(`[oz0 harness] ${message}\n`);
  } catch {
    // stderr is gone: nobody to tell
  }
}

/**
 * value if JSON can hold it as it is, else its String(): what a result or a tool's result is
 * sent as. undefined is null, so that a result always has its output.
 * @param {unknown} value
 * @returns {unknown}
 */
export function jsonable(value) {
  if (value === undefined) return null;
  try {
    if (JSON.stringify(value) === undefined) return String(value); // a function, a symbol
    return value;
  } catch {
    return String(value); // a BigInt, a cycle
  }
}

/**
 * The protocol's writer: one compact JSON object per line, in the order written.
 */
class Writer {
  /**
   * @param {(line: string, done?: (err?: Error | null) => void) => unknown} write writes a
   *   line and calls done once it is handed to the operating system
   */
  constructor(write) {
    this.write = write;
    this.finished = false;
  }

  /**
   * @param {Record<string, unknown>} message
   * @returns {string} the line, newline included
   */
  static encode(message) {
    // JSON strings may hold U+2028 and U+2029 raw; escape them so that no reader splits the line.
    const line = JSON.stringify(message).replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029") + "\n";
    const size = Buffer.byteLength(line, "utf8");
    if (size > MAX_LINE) {
      throw new ProtocolError(`a ${message.type} line of ${size} bytes is over the protocol's limit of ${MAX_LINE} bytes`);
    }
    return line;
  }

  /** @param {Record<string, unknown>} message */
  send(message) {
    const line = Writer.encode(message);
    if (this.finished) {
      logLine(`dropped a ${message.type} line after the session's last line`);
      return;
    }
    this.write(line);
  }

  /**
   * Writes the session's last line; resolves once it is written.
   * @param {Record<string, unknown>} message
   * @returns {Promise<void>}
   */
  end(message) {
    const line = Writer.encode(message);
    if (this.finished) {
      logLine(`dropped a ${message.type} line after the session's last line`);
      return Promise.resolve();
    }
    this.finished = true;
    return new Promise((resolve) => {
      this.write(line, (err) => {
        if (err) logLine(`cannot write the session's last line: ${err.message}`);
        resolve();
      });
    });
  }
}

const NODE_CLOSED = "the node closed the session before answering";

/**
 * @typedef {object} Permission the node's answer to a permission request
 * @property {string} [decision] "allow" or "deny"
 * @property {Record<string, unknown>} [arguments] allow: the arguments the job allowed
 * @property {string} [reason] deny: why
 */

/** Routes the node's permission answers to the ask() that waits for each. */
class Inbox {
  constructor() {
    /** @type {Map<string, (answer: Permission) => void>} */
    this.waiting = new Map();
    /** @type {string | null} why it is closed, once it is */
    this.closed = null;
  }

  /**
   * @param {string} id
   * @returns {Promise<Permission>}
   */
  expect(id) {
    if (this.closed !== null) return Promise.resolve({ decision: "deny", reason: this.closed });
    return new Promise((resolve) => this.waiting.set(id, resolve));
  }

  /** @param {Record<string, unknown>} message */
  deliver(message) {
    const id = message.id;
    const resolve = typeof id === "string" ? this.waiting.get(id) : undefined;
    if (resolve === undefined) {
      logLine(`ignored a permission answer for ${JSON.stringify(id)}: no request of that id is open`);
      return;
    }
    this.waiting.delete(/** @type {string} */ (id));
    resolve(/** @type {Permission} */ (message));
  }

  /** Denies every open and every later request with reason. */
  close(reason = NODE_CLOSED) {
    this.closed = reason;
    for (const resolve of this.waiting.values()) resolve({ decision: "deny", reason });
    this.waiting.clear();
  }
}

/**
 * A tool call the job allowed (Session.ask): run it with `arguments`, then report how it went,
 * once, with done() or failed(); the job shows the result.
 */
export class ToolCall {
  /**
   * @param {Writer} writer
   * @param {string} id
   * @param {string} tool
   * @param {Record<string, unknown>} args
   */
  constructor(writer, id, tool, args) {
    this.id = id;
    this.tool = tool;
    /** The arguments the job allowed: run the tool with these (a hook may have changed them). */
    this.arguments = args;
    this.#writer = writer;
  }

  #writer;
  #reported = false;

  /** Reports the tool's result. @param {unknown} result */
  done(result) {
    this.#report({ result: jsonable(result) });
  }

  /** Reports that the tool failed, with why. @param {unknown} error an Error or a message */
  failed(error) {
    this.#report({ error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
  }

  /** @param {Record<string, unknown>} outcome */
  #report(outcome) {
    if (this.#reported) return;
    this.#reported = true;
    this.#writer.send({ type: "tool_result", id: this.id, tool: this.tool, ...outcome });
  }
}

/**
 * One job's session: the request's fields, and the calls your agent makes back to the job.
 */
export class Session {
  /**
   * @param {Record<string, any>} request the session request
   * @param { {writer?: Writer, inbox?: Inbox}} [io] main()'s; a Session made without them (in a
   *   unit test of your agent, say) writes its events to stderr and has no node to ask: its
   *   tool calls are refused
   */
  constructor(request, io = {}) {
    const env = process.env;
    const model = isObject(request.model) ? request.model : {};
    /** The whole session request, as the node sent it. */
    this.request = request;
    /** @type {string} */
    this.job = String(request.job || env.OZ0_JOB || "");
    /** @type {string} */
    this.agent = String(request.agent || env.OZ0_AGENT || "");
    /** @type {string} the harness's name in oz0-plugin.yaml */
    this.harness = String(request.harness || "");
    const input = request.input;
    /** @type {unknown} the job's input as it came: a string, or any JSON for an agent with an input schema */
    this.input = input;
    let text = request.text;
    if (text === undefined || text === null) {
      text = typeof input === "string" || input === undefined ? input : JSON.stringify(input);
    }
    /** @type {string} the job's input as text */
    this.text = String(text ?? "");
    /** @type {string} the agent's prompt: the system prompt of its model calls */
    this.instructions = String(request.instructions || "");
    /** @type {Model} */
    this.model = Object.freeze({
      name: String(model.name || ""),
      format: String(model.format || "anthropic-messages"),
      record: String(model.record || ""),
    });
    /** @type {string[]} the tools the agent may call */
    this.tools = Array.isArray(request.tools) ? request.tools.map(String) : [];
    /** @type {Limits} */
    this.limits = isObject(request.limits) ? { ...request.limits } : {};
    /** @type {string} the session's working directory, empty at the start */
    this.workdir = String(request.workdir || process.cwd());
    /** @type {string} the session's private state directory (also HOME) */
    this.stateDir = String(request.state_dir || env.HOME || "");
    /** @type {Record<string, unknown>} the agent definition's harness.options */
    this.options = isObject(request.options) ? { ...request.options } : {};

    this.#writer = io.writer ?? new Writer((line, done) => process.stderr.write(line, done));
    let inbox = io.inbox;
    if (inbox === undefined) {
      inbox = new Inbox();
      inbox.close("no node to ask: this session does not run under main()");
    }
    this.#inbox = inbox;
  }

  #writer;
  #inbox;
  #steps = 0;
  #ids = 0;
  /** @type {string | undefined} who said the last text: undefined is the session's own agent */
  #speaker = undefined;
  #said = false;

  // -- the job's live view and trace ------------------------------------------------------

  /**
   * Streams text to the job's live view.
   *
   * `by` names the agent that says it when the session's code runs several (a framework's
   * sub-agents); left out, it is the session's own agent. When the speaker changes, the text
   * starts on a line of its own, another agent's with its name, "[billing] ", so that the live
   * view (which shows the job's agent) says which agent spoke.
   * @param {string} text
   * @param { {by?: string}} [options]
   */
  say(text, { by } = {}) {
    text = String(text);
    if (text && by !== this.#speaker) {
      text = (this.#said ? "\n" : "") + (by === undefined ? "" : `[${by}] `) + text;
      this.#speaker = by;
    }
    this.#said ||= text !== "";
    this.#writer.send({ type: "say", text });
  }

  /**
   * Writes a line to the job's trace (not its live view).
   * @param {string} message
   * @param {Level} [level]
   */
  log(message, level = "info") {
    this.#writer.send({ type: "log", level, message: String(message) });
  }

  // -- model calls ------------------------------------------------------------------------

  /** The model calls complete() has made so far. */
  get steps() {
    return this.#steps;
  }

  #takeStep() {
    const limit = this.limits.max_steps;
    // A missing or non-positive max_steps is no limit here; the gateway still counts.
    if (Number.isInteger(limit) && /** @type {number} */ (limit) > 0 && this.#steps >= /** @type {number} */ (limit)) {
      throw new StepLimitExceeded(
        `limits.max_steps reached: this session may make ${limit} model call${limit === 1 ? "" : "s"} and has made ${this.#steps}`,
      );
    }
    this.#steps++;
  }

  /**
   * One model call through the node's gateway, in the format of the session's model record:
   * Anthropic's Messages API or OpenAI's Chat Completions (session.model.format).
   *
   * The system prompt is the agent's instructions unless `system` is given. `prompt` is the user
   * message, or a list of messages in the record's format. Resolves to the text of the answer.
   * Counts toward limits.max_steps: past it, rejects with StepLimitExceeded without calling.
   * Rejects with ModelError when the call fails.
   *
   * @param {string | ChatMessage[]} prompt
   * @param { {maxTokens?: number, system?: string}} [options]
   * @returns {Promise<string>}
   */
  async complete(prompt, { maxTokens = 1024, system } = {}) {
    system = system ?? this.instructions;
    /** @type {ChatMessage[]} */
    let messages = typeof prompt === "string" ? [{ role: "user", content: prompt }] : prompt;
    if (this.model.format === "openai-chat") {
      if (system) messages = [{ role: "system", content: system }, ...messages];
      const answer = await this.#post("OPENAI", "/chat/completions",
        { model: this.model.name, max_tokens: maxTokens, messages },
        { authorization: `Bearer ${process.env.OPENAI_API_KEY ?? ""}` });
      const choice = Array.isArray(answer.choices) ? answer.choices[0] : undefined;
      if (!isObject(choice) || !isObject(choice.message)) {
        throw new ModelError(`the model API's answer has no message: ${clip(JSON.stringify(answer))}`);
      }
      return String(choice.message.content ?? "");
    }
    /** @type {Record<string, unknown>} */
    const body = { model: this.model.name, max_tokens: maxTokens, messages };
    if (system) body.system = system;
    const answer = await this.#post("ANTHROPIC", "/v1/messages", body,
      { "x-api-key": process.env.ANTHROPIC_API_KEY ?? "", "anthropic-version": ANTHROPIC_VERSION });
    if (!Array.isArray(answer.content)) {
      throw new ModelError(`the model API's answer has no content: ${clip(JSON.stringify(answer))}`);
    }
    return answer.content.filter((b) => isObject(b) && b.type === "text").map((b) => String(b.text ?? "")).join("");
  }

  /**
   * POSTs one model call to {provider}_BASE_URL + path with the job's headers; resolves to the
   * answer's JSON object.
   * @param {"ANTHROPIC" | "OPENAI"} provider
   * @param {string} path
   * @param {Record<string, unknown>} body
   * @param {Record<string, string>} headers
   * @returns {Promise<Record<string, any>>}
   */
  async #post(provider, path, body, headers) {
    const base = (process.env[`${provider}_BASE_URL`] ?? "").replace(/\/+$/, "");
    if (!base) {
      throw new ModelError(`${provider}_BASE_URL is not set: run the harness from a node (oz0 dev, oz0 plugin test) or set it to a model API`);
    }
    this.#takeStep();
    let response;
    try {
      response = await fetch(base + path, {
        method: "POST",
        headers: {
          ...headers,
          "content-type": "application/json",
          accept: "application/json",
          "Oz0-Job": this.job,
          "Oz0-Agent": this.agent,
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(MODEL_TIMEOUT_MS),
      });
    } catch (err) {
      const cause = /** @type { {cause?: {message?: string}, message?: string}} */ (err);
      if (cause?.cause) throw new ModelError(`cannot reach the model API at ${base}: ${cause.cause.message ?? cause.cause}`);
      throw new ModelError(`the model API did not answer: ${cause?.message ?? err}`);
    }
    const raw = await response.text();
    /** @type {unknown} */
    let answer;
    try {
      answer = JSON.parse(raw);
    } catch {
      if (!response.ok) throw new ModelError(`the model API answered ${response.status}: ${clip(raw.trim(), 500) || response.statusText}`, response.status);
      throw new ModelError(`the model API answered with something that is not JSON: ${clip(raw)}`);
    }
    if (!response.ok) throw new ModelError(`the model API answered ${response.status}: ${errorMessage(answer)}`, response.status);
    if (!isObject(answer)) throw new ModelError(`the model API's answer is not an object: ${clip(raw)}`);
    return answer;
  }

  // -- tool calls -------------------------------------------------------------------------

  /**
   * Asks the job before a tool call, then runs fn(arguments) with the arguments it allowed.
   *
   * Waits until the job answers (a person's approval may take a while). Rejects with Refused,
   * and the reason, when the job says no. The call and its result show in the job.
   *
   * @template T
   * @param {string} name the tool's name, as listed under harness.tools
   * @param {Record<string, unknown>} args the arguments you would call it with
   * @param {(args: Record<string, any>) => T | Promise<T>} fn the tool
   * @returns {Promise<T>}
   */
  async callTool(name, args, fn) {
    const call = await this.ask(name, args);
    let result;
    try {
      result = await fn(call.arguments);
    } catch (err) {
      call.failed(err);
      throw err;
    }
    call.done(result);
    return result;
  }

  /**
   * Asks the job before a tool call that something else runs, such as a framework's tool loop;
   * callTool() is this and the run. Resolves to the call with the arguments the job allowed: run
   * the tool with those, then say how it went with call.done(result) or call.failed(error).
   * Waits until the job answers; rejects with Refused when it says no.
   *
   * @param {string} name
   * @param {Record<string, unknown> | null | undefined} args
   * @returns {Promise<ToolCall>}
   */
  async ask(name, args) {
    if (args !== null && args !== undefined && (typeof args !== "object" || Array.isArray(args))) {
      throw new TypeError(`the arguments of a call of ${name} must be an object, not ${Array.isArray(args) ? "an array" : typeof args}`);
    }
    const id = `p${++this.#ids}`;
    // What JSON holds of them, as the job sees them (a BigInt as its digits).
    /** @type {Record<string, unknown>} */
    const asked = JSON.parse(JSON.stringify(args ?? {}, (_, v) => (typeof v === "bigint" ? String(v) : v)));
    const answer = this.#inbox.expect(id);
    this.#writer.send({ type: "permission_request", id, tool: name, arguments: asked });
    const permission = await answer;
    if (permission.decision !== "allow") {
      throw new Refused(permission.reason ? String(permission.reason) : `the job denied ${name}`);
    }
    const allowed = isObject(permission.arguments) ? permission.arguments : asked;
    return new ToolCall(this.#writer, id, name, allowed);
  }
}

/**
 * @param {unknown} v
 * @returns {v is Record<string, any>}
 */
function isObject(v) {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function clip(/** @type {string} */ s, n = 200) {
  return s.length > n ? s.slice(0, n) + "…" : s;
}

/**
 * The provider's message from an error answer: both Anthropic's and OpenAI's shapes have
 * error.type and error.message.
 * @param {unknown} body
 */
function errorMessage(body) {
  const error = isObject(body) ? body.error : undefined;
  if (isObject(error) && error.message) return error.type ? `${error.type}: ${error.message}` : String(error.message);
  if (typeof error === "string") return error;
  return clip(JSON.stringify(body), 500);
}

/**
 * The session's end for an error: its class and message, as the job shows it.
 * @param {unknown} err
 */
function describe(err) {
  if (err instanceof Error) return err.message ? `${err.name}: ${err.message}` : err.name;
  return String(err);
}

/**
 * The session request, from the first line of stdin.
 * @param {string} line
 * @returns {Record<string, any>}
 */
function parseRequest(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    throw new ProtocolError("the first line is not a JSON session request");
  }
  if (!isObject(request) || request.type !== "session") {
    throw new ProtocolError("the first line is not a session request");
  }
  if (!PROTOCOLS.includes(request.protocol)) {
    throw new ProtocolError(`the session asks for protocol ${JSON.stringify(request.protocol)}`);
  }
  return request;
}

/**
 * Runs one session: reads the request, calls run(session), writes its result, and exits: 0 after
 * a result, 1 after an error. It exits at once after the last line, so that open sockets (a
 * model client's keep-alive connections) and timers do not hold the process.
 *
 * @param {(session: Session) => unknown} run your agent; what it returns (or resolves to) is
 *   the job's result, text or anything JSON can hold
 */
export function main(run) {
  // stdout is the protocol's alone: keep its writer, and send everything else that writes there
  // through process.stdout (console.log, a framework's printer) to stderr.
  const stdout = process.stdout;
  const protocolWrite = stdout.write.bind(stdout);
  stdout.write = /** @type {typeof stdout.write} */ (process.stderr.write.bind(process.stderr));
  const writer = new Writer((line, done) => protocolWrite(line, done));
  stdout.on("error", (err) => {
    logLine(`stdout failed: ${err.message}; the node is gone`);
    process.exit(1);
  });
  // Cancel and timeout are SIGTERM: end at once, whatever a library installed.
  process.on("SIGTERM", () => process.exit(143));

  /** @param {unknown} err */
  const fail = (err) => {
    if (err instanceof Error && err.stack) logLine(err.stack);
    writer.end({ type: "error", message: describe(err).slice(0, 1_000_000) }).then(() => process.exit(1));
  };
  // A rejection nobody awaits, or an exception thrown in a callback, ends the session with an
  // error that says so, instead of a process that dies without a last line.
  process.on("uncaughtException", fail);
  process.on("unhandledRejection", fail);

  const inbox = new Inbox();
  let started = false;
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on("line", (line) => {
    if (started) return route(inbox, line);
    started = true;
    let request;
    try {
      request = parseRequest(line);
    } catch (err) {
      return refuse(/** @type {Error} */ (err));
    }
    Promise.resolve()
      .then(() => run(new Session(request, { writer, inbox })))
      .then((output) => writer.end({ type: "result", output: jsonable(output) }))
      .then(() => process.exit(0), fail);
  });
  lines.on("close", () => {
    if (started) inbox.close();
    else refuse(new ProtocolError("stdin closed before the session request"));
  });

  /** @param {Error} err why the session cannot start */
  const refuse = (err) => {
    started = true;
    logLine(err.message);
    const speaks = `this harness speaks protocol ${PROTOCOLS.join(", ")}`;
    writer.end({ type: "error", message: `${err.message}: ${speaks}` }).then(() => process.exit(1));
  };
}

/**
 * Routes one line of the node's after the request.
 * @param {Inbox} inbox
 * @param {string} line
 */
function route(inbox, line) {
  line = line.trim();
  if (!line) return;
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    logLine(`ignored a line on stdin that is not JSON: ${JSON.stringify(clip(line))}`);
    return;
  }
  if (!isObject(message)) logLine(`ignored a line on stdin that is not a JSON object: ${JSON.stringify(clip(line))}`);
  else if (message.type === "permission") inbox.deliver(message);
  else logLine(`ignored a message of type ${JSON.stringify(message.type)} on stdin`);
}
