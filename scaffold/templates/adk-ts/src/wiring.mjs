// @ts-check
/**
 * How an ADK agent runs as this plugin's harness: what onTheGateway(session) adds to
 * `new LlmAgent({...})`, and runAgent(), which runs it.
 *
 * - model: GatewayLlm, ADK's own extension point for a model that is not Gemini (a BaseLlm),
 *   speaking the gateway's Anthropic Messages face with the Anthropic SDK: the session's key, the
 *   job's Oz0-Job and Oz0-Agent headers, no retries (the gateway refuses a call past a limit with
 *   429), streamed when ADK streams. ADK's own model is Gemini, whose API the gateway does not
 *   serve; a model name string would be resolved to it.
 * - beforeToolCallback: every tool call is asked first (FunctionTools, MCP toolsets' tools, an
 *   agent called as a tool alike); the arguments the job allowed replace the model's, and ADK
 *   runs the tool as it always does. A refusal is the tool's answer, "refused: <why>", which the
 *   model reads and goes on. afterToolCallback tells the job how it went.
 * - no instruction: a sub-agent's is its own (new LlmAgent({name, instruction, ...})), and
 *   runAgent() gives the agent it runs the agent's instructions (prompts/<name>.md). ADK's system
 *   instruction (the instruction, and what its features add: a line naming the agent and the
 *   hand-over to sub-agents) is the system prompt as ADK makes it.
 * - runAgent(): a Runner with server-sent events, so the model's text streams to session.say()
 *   (a sub-agent's under its name); a plugin of the Runner's tells the job of a tool that threw
 *   (ADK gives the model the error and goes on); each toolset (an MCP server's) loads its tools
 *   first, so that one that cannot fails the job instead of the agent running without them.
 *
 * And traced(run): ADK's own OpenTelemetry spans (invocation, invoke_agent, call_llm,
 * execute_tool) go to the node's OTLP receiver (OTEL_EXPORTER_OTLP_* variables the node sets) as
 * children of the job's span (TRACEPARENT). ADK's maybeSetOtelProviders() would send metrics and
 * logs to the node too, which it does not take.
 */

import Anthropic from "@anthropic-ai/sdk";
import { BaseLlm, BasePlugin, BaseToolset, InMemorySessionService, Runner, StreamingMode, isFinalResponse, isLlmAgent } from "@google/adk";

import { Refused } from "./harness.mjs";

/** The most tokens one model answer may take, unless the agent's generateContentConfig says. */
export const MAX_TOKENS = 8192;

/** ADK's own tools for handing over to a sub-agent, a structured answer and a task's end: they
 * run nothing outside the agent, so there is nothing for the job to decide. */
const NOT_ASKED = new Set(["transfer_to_agent", "set_model_response", "finish_task"]);

/**
 * @typedef {import("./harness.mjs").Session} Session
 * @typedef {import("./harness.mjs").ToolCall} ToolCall
 * @typedef {import("@google/adk").LlmAgent} LlmAgent
 * @typedef {import("@google/adk").LlmAgentConfig} LlmAgentConfig
 * @typedef {import("@google/adk").LlmRequest} LlmRequest
 * @typedef {import("@google/adk").LlmResponse} LlmResponse
 * @typedef {import("@google/adk").BaseAgent} BaseAgent
 * @typedef {NonNullable<LlmRequest["contents"][number]["parts"]>[number]} Part
 * @typedef {import("@anthropic-ai/sdk").default.MessageParam} MessageParam
 * @typedef {import("@anthropic-ai/sdk").default.ContentBlockParam} ContentBlockParam
 * @typedef {import("@anthropic-ai/sdk").default.Message} Message
 */

/**
 * The `new LlmAgent({...})` options that run an ADK agent as the session's.
 * @param {Session} session
 * @returns {Pick<LlmAgentConfig, "model" | "beforeToolCallback" | "afterToolCallback">}
 */
export function onTheGateway(session) {
  const asking = AskTheJob.of(session);
  return {
    model: new GatewayLlm({ model: session.model.name, session }),
    beforeToolCallback: (params) => asking.before(params),
    afterToolCallback: (params) => asking.after(params),
  };
}

/**
 * ADK's model on the node's gateway: Anthropic's Messages API, through the Anthropic SDK, streamed
 * when ADK streams (RunConfig's streamingMode SSE, as runAgent() runs).
 */
export class GatewayLlm extends BaseLlm {
  /** @type {Array<string | RegExp>} none: it is given to an agent, never looked up by a name */
  static supportedModels = [];

  /** @param { {model: string, session: Session}} options */
  constructor({ model, session }) {
    super({ model });
    this.client = new Anthropic({
      baseURL: process.env.ANTHROPIC_BASE_URL,
      apiKey: process.env.ANTHROPIC_API_KEY,
      defaultHeaders: { "Oz0-Job": session.job, "Oz0-Agent": session.agent },
      maxRetries: 0,
    });
  }

  /**
   * @param {LlmRequest} request
   * @param {boolean} [stream]
   * @param {AbortSignal} [signal]
   * @returns {AsyncGenerator<LlmResponse, void>}
   */
  async *generateContentAsync(request, stream = false, signal) {
    const body = messagesRequest(request, this.model);
    if (!stream) {
      yield llmResponse(await this.client.messages.create(body, { signal }));
      return;
    }
    const events = this.client.messages.stream(body, { signal });
    for await (const event of events) {
      if (event.type === "content_block_delta" && event.delta.type === "text_delta" && event.delta.text) {
        yield { content: { role: "model", parts: [{ text: event.delta.text }] }, partial: true };
      }
    }
    yield llmResponse(await events.finalMessage());
  }

  /** @returns {Promise<never>} */
  async connect() {
    throw new Error("GatewayLlm: the gateway serves no live (bidirectional) connection; run the agent with runAgent()");
  }
}

/**
 * ADK's request as an Anthropic Messages request: the system instruction ADK made, the contents
 * (text, function calls and their responses), the function declarations as tools.
 * @param {LlmRequest} request
 * @param {string} model
 * @returns {import("@anthropic-ai/sdk").default.MessageCreateParamsNonStreaming}
 */
export function messagesRequest(request, model) {
  const config = request.config ?? {};
  /** @type {import("@anthropic-ai/sdk").default.MessageCreateParamsNonStreaming} */
  const body = { model: request.model || model, max_tokens: config.maxOutputTokens ?? MAX_TOKENS, messages: messages(request.contents) };
  const system = textOf(config.systemInstruction);
  if (system) body.system = system;
  const tools = (config.tools ?? []).flatMap((t) => ("functionDeclarations" in t ? t.functionDeclarations ?? [] : []));
  if (tools.length) {
    body.tools = tools.map((d) => ({
      name: d.name ?? "",
      description: d.description ?? "",
      input_schema: /** @type {any} */ (d.parametersJsonSchema ?? jsonSchema(d.parameters) ?? { type: "object", properties: {} }),
    }));
  }
  if (config.temperature !== undefined) body.temperature = config.temperature;
  if (config.topP !== undefined) body.top_p = config.topP;
  if (config.stopSequences?.length) body.stop_sequences = config.stopSequences;
  return body;
}

/**
 * The system instruction as text: a string, or a Content's text parts.
 * @param {unknown} instruction
 */
function textOf(instruction) {
  if (typeof instruction === "string") return instruction;
  const parts = /** @type { {parts?: {text?: string}[]} | undefined} */ (instruction)?.parts ?? [];
  return parts.map((p) => p.text ?? "").join("");
}

/**
 * ADK's contents as Anthropic messages: "model" is the assistant, "user" the user; a role's
 * turns in a row are one message, as the API takes them.
 * @param {LlmRequest["contents"]} contents
 * @returns {MessageParam[]}
 */
function messages(contents) {
  /** @type {MessageParam[]} */
  const out = [];
  for (const content of contents) {
    const role = content.role === "model" ? "assistant" : "user";
    const blocks = (content.parts ?? []).flatMap(block);
    if (!blocks.length) continue;
    const last = out.at(-1);
    if (last?.role === role) /** @type {ContentBlockParam[]} */ (last.content).push(...blocks);
    else out.push({ role, content: blocks });
  }
  return out;
}

/**
 * @param {Part} part
 * @returns {ContentBlockParam[]}
 */
function block(part) {
  if (part.thought) return [];
  const call = part.functionCall;
  if (call) return [{ type: "tool_use", id: call.id ?? "", name: call.name ?? "", input: call.args ?? {} }];
  const response = part.functionResponse;
  if (response) return [{ type: "tool_result", tool_use_id: response.id ?? "", content: answerText(response.response) }];
  if (part.text) return [{ type: "text", text: part.text }];
  return [];
}

/**
 * What the model reads of a tool's answer: ADK wraps a value that is not an object as
 * {result: value}, which is read as the value; an MCP tool's result as its text; anything else
 * as JSON.
 * @param {Record<string, unknown> | undefined} response
 */
function answerText(response) {
  if (response && Object.keys(response).length === 1 && "result" in response) {
    return typeof response.result === "string" ? response.result : JSON.stringify(response.result ?? null);
  }
  const content = response?.content;
  if (Array.isArray(content) && content.every((c) => c?.type === "text")) return content.map((c) => String(c.text)).join("\n");
  return JSON.stringify(response ?? {});
}

/**
 * A Gemini Schema (its types in capitals) as JSON Schema: what a FunctionTool's declaration has.
 * @param {unknown} schema
 * @returns {unknown}
 */
function jsonSchema(schema) {
  if (Array.isArray(schema)) return schema.map(jsonSchema);
  if (schema === null || typeof schema !== "object") return schema;
  return Object.fromEntries(Object.entries(schema).map(([k, v]) => {
    if (k === "type" && typeof v === "string") return [k, v.toLowerCase()];
    if (k === "properties" && v && typeof v === "object") return [k, Object.fromEntries(Object.entries(v).map(([n, s]) => [n, jsonSchema(s)]))];
    return [k, k === "items" || k === "anyOf" ? jsonSchema(v) : v];
  }));
}

/**
 * An Anthropic answer as ADK's response: its text and tool calls, the usage, why it stopped.
 * @param {Message} message
 * @returns {LlmResponse}
 */
function llmResponse(message) {
  /** @type {Part[]} */
  const parts = [];
  for (const b of message.content) {
    if (b.type === "text") parts.push({ text: b.text });
    else if (b.type === "tool_use") parts.push({ functionCall: { id: b.id, name: b.name, args: /** @type {Record<string, unknown>} */ (b.input) } });
  }
  const { input_tokens: prompt, output_tokens: candidates } = message.usage;
  return {
    content: { role: "model", parts },
    usageMetadata: { promptTokenCount: prompt, candidatesTokenCount: candidates, totalTokenCount: prompt + candidates },
    finishReason: /** @type {any} */ (message.stop_reason === "max_tokens" ? "MAX_TOKENS" : "STOP"),
    turnComplete: true,
  };
}

/**
 * The tool callbacks: each call asked before ADK runs it, its outcome told after. One a session,
 * shared by its agents, so that the Runner's plugin finds the call a tool that threw was asked as.
 */
export class AskTheJob {
  /** @type {WeakMap<Session, AskTheJob>} */
  static #sessions = new WeakMap();

  /** @param {Session} session */
  static of(session) {
    let asking = AskTheJob.#sessions.get(session);
    if (!asking) AskTheJob.#sessions.set(session, (asking = new AskTheJob(session)));
    return asking;
  }

  /** @param {Session} session */
  constructor(session) {
    this.session = session;
    /** @type {Map<string, ToolCall>} the calls the job allowed, by ADK's function call id, while the tool runs */
    this.calls = new Map();
  }

  /**
   * @param { {tool: {name: string}, args: Record<string, unknown>, context: {functionCallId?: string}}} params
   * @returns {Promise<Record<string, unknown> | undefined>}
   */
  async before({ tool, args, context }) {
    if (NOT_ASKED.has(tool.name)) return undefined;
    let call;
    try {
      call = await this.session.ask(tool.name, args);
    } catch (err) {
      if (!(err instanceof Refused)) throw err;
      return { result: `refused: ${err.reason}` }; // the tool's answer: ADK does not run it
    }
    // ADK runs the tool with this very object: the job's arguments replace the model's.
    const allowed = { ...call.arguments };
    for (const key of Object.keys(args)) delete args[key];
    Object.assign(args, allowed);
    if (context.functionCallId) this.calls.set(context.functionCallId, call);
    return undefined;
  }

  /**
   * @param { {context: {functionCallId?: string}, response: Record<string, unknown> | undefined}} params
   * @returns {Promise<undefined>}
   */
  async after({ context, response }) {
    const call = this.take(context.functionCallId);
    if (call === undefined) return undefined; // refused, not asked, or it threw (failed())
    const failure = failureOf(response);
    if (failure !== undefined) call.failed(failure);
    else if (response && Object.keys(response).length === 1 && "result" in response) call.done(response.result);
    else if (response && Object.keys(response).length === 1 && "results" in response) call.done(response.results);
    else call.done(response);
    return undefined;
  }

  /**
   * A tool that threw: the job is told; ADK gives the model the error and goes on.
   * @param {string | undefined} id
   * @param {Error} error
   */
  failed(id, error) {
    this.take(id)?.failed(error);
  }

  /** @param {string | undefined} id */
  take(id) {
    const call = id === undefined ? undefined : this.calls.get(id);
    if (id !== undefined) this.calls.delete(id);
    return call;
  }
}

/**
 * Why a tool's answer is a failure, or undefined: an MCP tool's result says isError.
 * @param {Record<string, unknown> | undefined} response
 */
function failureOf(response) {
  if (response?.isError !== true) return undefined;
  return answerText({ content: response.content }) || "the MCP tool failed";
}

/** The Runner's plugin: a tool that threw is the call's failure in the job. */
class ToolErrors extends BasePlugin {
  /** @param {AskTheJob} asking */
  constructor(asking) {
    super("oz0-tool-errors");
    this.asking = asking;
  }

  /**
   * @param { {toolContext: {functionCallId?: string}, error: Error}} params
   * @returns {Promise<undefined>}
   */
  async onToolErrorCallback({ toolContext, error }) {
    this.asking.failed(toolContext.functionCallId, error);
    return undefined;
  }
}

/**
 * Runs the agent on the job's input; its text streams to the job; resolves to its final answer.
 * Its instruction, when it has none of its own, is the agent's instructions (prompts/<name>.md),
 * given as a function so that ADK does not fill {placeholders} in them from its session state;
 * its sub-agents keep theirs.
 * @param {Session} session
 * @param {LlmAgent} agent
 * @returns {Promise<string>}
 */
export async function runAgent(session, agent) {
  if (!agent.instruction) agent.instruction = () => session.instructions;
  const runner = new Runner({
    appName: "oz0",
    agent,
    sessionService: new InMemorySessionService(),
    plugins: [new ToolErrors(AskTheJob.of(session))],
  });
  const adkSession = await runner.sessionService.createSession({ appName: "oz0", userId: session.job || "oz0" });
  let answer = "";
  try {
    await loadToolsets(agent);
    const events = runner.runAsync({
      userId: adkSession.userId,
      sessionId: adkSession.id,
      newMessage: { role: "user", parts: [{ text: session.text }] },
      runConfig: { streamingMode: StreamingMode.SSE },
    });
    for await (const event of events) {
      if (event.errorMessage) throw new Error(`ADK: ${event.errorCode ?? "error"}: ${event.errorMessage}`);
      const text = (event.content?.parts ?? []).filter((p) => p.text && !p.thought).map((p) => p.text).join("");
      if (event.partial) {
        // A sub-agent's text is said under its name (the live view shows the job's agent).
        if (text) session.say(text, event.author === agent.name ? {} : { by: event.author });
      } else if (text && isFinalResponse(event)) {
        answer = text;
      }
    }
  } finally {
    await closeToolsets(agent); // an MCP server's process
  }
  return answer;
}

/**
 * Loads the tools of each toolset of the agent and its sub-agents (an MCP server's: it starts the
 * server), so that one that cannot fails the session, saying why: ADK itself would run the agent
 * without them, and the model would never know they were meant to be there.
 * @param {BaseAgent} agent
 */
async function loadToolsets(agent) {
  for (const tool of isLlmAgent(agent) ? agent.tools : []) {
    if (!(tool instanceof BaseToolset)) continue;
    try {
      await tool.getTools();
    } catch (err) {
      const why = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      throw new Error(`agent ${agent.name}: its ${tool.constructor.name}${server(tool)} could not load its tools: ${why}`);
    }
  }
  for (const sub of agent.subAgents) await loadToolsets(sub);
}

/** @param {BaseAgent} agent */
async function closeToolsets(agent) {
  for (const tool of isLlmAgent(agent) ? agent.tools : []) {
    if (tool instanceof BaseToolset) await tool.close().catch(() => {});
  }
  for (const sub of agent.subAgents) await closeToolsets(sub);
}

/**
 * The MCP server a toolset starts, as the job's error names it: " (`command args`)".
 * @param {BaseToolset} toolset
 */
function server(toolset) {
  const params = /** @type {any} */ (toolset).mcpSessionManager?.connectionParams?.serverParams;
  if (typeof params?.command !== "string") return "";
  return ` (\`${[params.command, ...(params.args ?? [])].join(" ")}\`)`;
}

/**
 * Runs fn (the agent's run) with ADK's tracing on when the node receives spans
 * (OTEL_EXPORTER_OTLP_ENDPOINT), in the job's span (TRACEPARENT), and sends its spans before it
 * returns: the session exits right after its result.
 * @template T
 * @param {() => Promise<T>} fn
 * @returns {Promise<T>}
 */
export async function traced(fn) {
  if (!process.env.OTEL_EXPORTER_OTLP_ENDPOINT) return fn();
  const { BatchSpanProcessor, NodeTracerProvider } = await import("@opentelemetry/sdk-trace-node");
  const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-http");
  const { context, propagation } = await import("@opentelemetry/api");
  const provider = new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
  provider.register(); // the global provider ADK's tracer uses, and the W3C propagator
  const job = propagation.extract(context.active(), { traceparent: process.env.TRACEPARENT ?? "" });
  try {
    return await context.with(job, fn);
  } finally {
    await provider.forceFlush();
  }
}
