// @ts-check
/**
 * How a Strands agent runs as this plugin's harness: what onTheGateway(session) adds to
 * `new Agent({...})`.
 *
 * - model: Strands' AnthropicModel, or its OpenAIModel on Chat Completions (`api: "chat"`: its
 *   default is OpenAI's Responses API, which the gateway does not serve), in the session's format,
 *   on the node's gateway with the session's key, sending the job's Oz0-Job and Oz0-Agent
 *   headers; never Agent's default (Bedrock, on AWS). Only the model module the session needs is
 *   imported.
 * - plugins: every tool call is asked first (BeforeToolCallEvent): it runs with the arguments the
 *   job allowed, and a refusal cancels it with "refused: <why>" as its answer, which the model
 *   reads and goes on; the tool's result is shown in the job (AfterToolCallEvent). The model's
 *   text goes to session.say() as it streams (ModelStreamUpdateEvent).
 * - printer: false. Strands' default printer writes the agent's output to stdout, which main()
 *   sends to the job's log; what the job shows is say().
 * - retryStrategy: null, and maxRetries: 0 for the SDK's client. The gateway refuses a call past a
 *   limit with 429, and retrying it only spends time: Strands retries a 429 six times by default,
 *   with backoff, whatever the answer's x-should-retry says, and the SDKs twice.
 * - toolExecutor: "sequential": one tool call at a time, so that each is asked in the model's order.
 *
 * And traced(run): Strands' own OpenTelemetry spans (the agent, each model call, each tool) go to
 * the node's OTLP receiver (setupTracer's OTLP exporter, on the OTEL_EXPORTER_OTLP_* variables the
 * node sets), as children of the job's span (TRACEPARENT): the job's timeline and your
 * OpenTelemetry backend show them under the job.
 */

import { AfterToolCallEvent, BeforeToolCallEvent, ModelStreamUpdateEvent, ToolResultBlock } from "@strands-agents/sdk";

import { Refused } from "./harness.mjs";

/** The most tokens one model answer may take. */
export const MAX_TOKENS = 8192;

/**
 * @typedef {import("./harness.mjs").Session} Session
 * @typedef {import("./harness.mjs").ToolCall} ToolCall
 * @typedef {import("@strands-agents/sdk").AgentConfig} AgentConfig
 * @typedef {import("@strands-agents/sdk").Plugin} Plugin
 * @typedef {import("@strands-agents/sdk").LocalAgent} LocalAgent
 */

/**
 * The `new Agent({...})` options that run a Strands agent as the session's.
 * @param {Session} session
 * @returns {Promise<Pick<AgentConfig, "model" | "plugins" | "printer" | "retryStrategy" | "toolExecutor">>}
 */
export async function onTheGateway(session) {
  return {
    model: await model(session),
    plugins: [new AskTheJob(session)],
    printer: false,
    retryStrategy: null,
    toolExecutor: "sequential",
  };
}

/**
 * Runs fn (the agent's run) with Strands' tracing on when the node receives spans
 * (OTEL_EXPORTER_OTLP_ENDPOINT), in the job's span (TRACEPARENT), and sends its spans before it
 * returns: the session exits right after its result.
 * @template T
 * @param {() => Promise<T>} fn
 * @returns {Promise<T>}
 */
export async function traced(fn) {
  if (!process.env.OTEL_EXPORTER_OTLP_ENDPOINT) return fn();
  const { setupTracer } = await import("@strands-agents/sdk/telemetry");
  const { context, propagation } = await import("@opentelemetry/api");
  const provider = setupTracer({ exporters: { otlp: true } });
  const job = propagation.extract(context.active(), { traceparent: process.env.TRACEPARENT ?? "" });
  try {
    return await context.with(job, fn);
  } finally {
    await provider.forceFlush();
  }
}

/**
 * Strands' model for the session's model record, on the node's gateway.
 * @param {Session} session
 */
export async function model(session) {
  const defaultHeaders = { "Oz0-Job": session.job, "Oz0-Agent": session.agent };
  if (session.model.format === "openai-chat") {
    const { OpenAIModel } = await import("@strands-agents/sdk/models/openai");
    return new OpenAIModel({
      api: "chat",
      modelId: session.model.name,
      maxTokens: MAX_TOKENS,
      clientConfig: { baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY, defaultHeaders, maxRetries: 0 },
    });
  }
  const { AnthropicModel } = await import("@strands-agents/sdk/models/anthropic");
  return new AnthropicModel({
    modelId: session.model.name,
    maxTokens: MAX_TOKENS,
    clientConfig: { baseURL: process.env.ANTHROPIC_BASE_URL, apiKey: process.env.ANTHROPIC_API_KEY, defaultHeaders, maxRetries: 0 },
  });
}

/**
 * A Strands plugin: every tool call is asked first and its result shown in the job; the model's
 * text streams to the job.
 * @implements {Plugin}
 */
export class AskTheJob {
  name = "oz0:ask-the-job";

  /** @param {Session} session */
  constructor(session) {
    this.session = session;
    /** @type {Map<string, ToolCall>} the calls the job allowed, by the model's tool use id */
    this.calls = new Map();
  }

  /** @param {LocalAgent} agent */
  initAgent(agent) {
    agent.addHook(BeforeToolCallEvent, (event) => this.before(event));
    agent.addHook(AfterToolCallEvent, (event) => this.after(event));
    agent.addHook(ModelStreamUpdateEvent, (event) => this.streamed(event));
  }

  /** @param {BeforeToolCallEvent} event */
  async before(event) {
    const use = event.toolUse;
    let call;
    try {
      call = await this.session.ask(use.name, /** @type {Record<string, unknown>} */ (use.input ?? {}));
    } catch (err) {
      if (!(err instanceof Refused)) throw err;
      event.cancel = `refused: ${err.reason}`;
      return;
    }
    this.calls.set(use.toolUseId, call);
    event.toolUse = { ...use, input: /** @type {any} */ (call.arguments) };
  }

  /** @param {AfterToolCallEvent} event */
  after(event) {
    const call = this.calls.get(event.toolUse.toolUseId);
    const result = event.result;
    if (call === undefined) {
      // Refused: the model reads the refusal as the tool's answer, not as an error.
      if (textOf(result).startsWith("refused: ")) {
        event.result = new ToolResultBlock({ toolUseId: result.toolUseId, status: "success", content: result.content });
      }
      return;
    }
    this.calls.delete(event.toolUse.toolUseId);
    if (result.status === "error") call.failed(textOf(result));
    else call.done(valueOf(result));
  }

  /** @param {ModelStreamUpdateEvent} event */
  streamed({ event }) {
    if (event.type === "modelContentBlockDeltaEvent" && event.delta.type === "textDelta" && event.delta.text) {
      this.session.say(event.delta.text);
    }
  }
}

/**
 * The text of a tool's result: its text blocks, and its JSON blocks as JSON.
 * @param {ToolResultBlock} result
 */
function textOf(result) {
  return result.content.map((block) => ("text" in block ? block.text : "json" in block ? JSON.stringify(block.json) : "")).join("");
}

/**
 * What the job shows as a tool's result: the value a tool returned as JSON (Strands wraps an
 * array as { $value: [...] }), else its text.
 * @param {ToolResultBlock} result
 */
function valueOf(result) {
  const [block] = result.content;
  if (result.content.length === 1 && "json" in block) {
    const json = /** @type {any} */ (block.json);
    return json !== null && typeof json === "object" && "$value" in json && Object.keys(json).length === 1 ? json.$value : json;
  }
  return textOf(result);
}
