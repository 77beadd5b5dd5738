// @ts-check
/**
 * agent.mjs and wiring.mjs on the real ADK (node_modules, after npm ci), run as a node runs them
 * (the harness over a pipe) against a fake model API that calls the agent's tool and then says
 * what it answered, streamed as ADK asks for it.
 *
 * If you replace agent.mjs with an agent that has no notify_team, change TOOL, ASKED and ANSWER.
 */

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";

import { HARNESS_URL, INSTRUCTIONS, JOB, MODEL_NAME, NAME, ROOT, SESSION_KEY, TICKET, Sessions, allow, deny, says } from "./sessions.mjs";

const MANIFEST = readFileSync(join(ROOT, "oz0-plugin.yaml"), "utf8");
const FORMATS = (MANIFEST.match(/formats:\s*\[([^\]]*)\]/)?.[1] ?? "").split(",").map((f) => f.trim()).filter(Boolean);
const TOOL = "notify_team";
/** The arguments the fake model calls the tool with. */
const ASKED = { team: "billing", summary: "A customer was charged twice." };
const ANSWER = "told the billing team: A customer was charged twice.";

/** @param {import("node:test").TestContext} t */
async function sessions(t) {
  const s = await Sessions.start(t);
  s.api.toolCalls = [[TOOL, ASKED]]; // TOOL by its name, whatever else the agent offers
  return s;
}

/** @param {any} body */
function systemText(body) {
  return typeof body.system === "string" ? body.system : (body.system ?? []).map((/** @type {any} */ b) => b.text).join("");
}

test("the manifest lists the format the wiring speaks", () => {
  assert.deepEqual(FORMATS, ["anthropic-messages"]);
});

test("a tool call is asked, runs and is answered; the text streams", async (t) => {
  const s = await sessions(t);
  const { events, code, run } = await s.session({ answer: allow });
  assert.equal(code, 0, await run.log());
  const asked = events.filter((e) => e.type === "permission_request");
  assert.deepEqual(asked.map((e) => [e.tool, e.arguments]), [[TOOL, ASKED]], await run.log());
  assert.deepEqual(events.filter((e) => e.type === "tool_result"), [{ type: "tool_result", id: asked[0].id, tool: TOOL, result: ANSWER }]);
  assert.deepEqual(events.at(-1), { type: "result", output: `The tool answered: ${ANSWER}` });
  assert.equal(says(events), `The tool answered: ${ANSWER}`);
  assert.ok(events.filter((e) => e.type === "say").length > 1, "the text came in one piece: it was not streamed");
});

test("a refusal is the tool's answer, and the agent goes on", async (t) => {
  const s = await sessions(t);
  const { events, code, run } = await s.session({ answer: deny("billing is told by a person") });
  assert.equal(code, 0, await run.log());
  assert.deepEqual(events.filter((e) => e.type === "tool_result"), []);
  assert.equal(events.at(-1)?.output, "The tool answered: refused: billing is told by a person");
});

test("the model client is on the gateway, streaming, with ADK's system instruction", async (t) => {
  const s = await sessions(t);
  const { code, run } = await s.session({ answer: allow });
  assert.equal(code, 0, await run.log());
  const calls = s.api.calls();
  assert.equal(calls.length, 2, "a call with the tool offered, one after it");
  for (const { path, headers, body } of calls) {
    assert.equal(path, "/gateway/anthropic/v1/messages");
    assert.equal(headers["x-api-key"], SESSION_KEY);
    assert.equal(headers["oz0-job"], JOB);
    assert.equal(headers["oz0-agent"], NAME);
    assert.equal(body.model, MODEL_NAME);
    assert.equal(body.stream, true);
    // ADK's system instruction as ADK makes it: the agent's instructions, after the line ADK
    // adds to name the agent.
    assert.ok(systemText(body).includes(INSTRUCTIONS), systemText(body));
    assert.ok(body.tools.map((/** @type {any} */ t) => t.name).includes(TOOL));
  }
  const schema = calls[0].body.tools.find((/** @type {any} */ t) => t.name === TOOL).input_schema;
  assert.equal(schema.type, "object");
  assert.deepEqual(Object.keys(schema.properties), Object.keys(ASKED));
  assert.ok(JSON.stringify(calls[0].body.messages).includes(TICKET));
});

test("a limit is not retried", async (t) => {
  const s = await sessions(t);
  s.api.status = 429; // the gateway's answer past limits.max_steps
  const { events, code, run } = await s.session({});
  assert.equal(code, 1);
  assert.equal(events.at(-1)?.type, "error", await run.log());
  assert.match(events.at(-1)?.message, /429/);
  assert.equal(s.api.calls().length, 1, "the refused call was retried");
});

test("the tool runs with the arguments the job allowed", async (t) => {
  const s = await sessions(t);
  const { events, code, run } = await s.session({
    answer: (run, event) => run.send({ type: "permission", id: event.id, decision: "allow", arguments: { team: "account", summary: "changed by a hook" } }),
  });
  assert.equal(code, 0, await run.log());
  assert.equal(events.find((e) => e.type === "tool_result")?.result, "told the account team: changed by a hook");
  assert.equal(events.at(-1)?.output, "The tool answered: told the account team: changed by a hook");
});

test("GatewayLlm is ADK's model interface: ADK takes it as the agent's model", async () => {
  const { BaseLlm, LlmAgent, isBaseLlm } = await import("@google/adk");
  const { GatewayLlm, onTheGateway } = await import("../src/wiring.mjs");
  const { Session } = await import("../src/harness.mjs");
  const session = new Session({ job: JOB, agent: NAME, model: { name: MODEL_NAME, format: "anthropic-messages" } });
  const agent = new LlmAgent({ name: "triage", ...onTheGateway(session) });
  assert.ok(agent.canonicalModel instanceof GatewayLlm);
  assert.ok(agent.canonicalModel instanceof BaseLlm);
  assert.ok(isBaseLlm(agent.canonicalModel));
  assert.equal(agent.canonicalModel.model, MODEL_NAME);
});

test("a tool that throws is the call's error in the job; ADK's model reads it and goes on", async (t) => {
  const s = await Sessions.start(t);
  s.api.toolCalls = [["look_up_order", { order_id: "A-17" }]];
  // An agent of the test's own, in a directory beside the plugin's packages.
  const dir = mkdtempSync(join(tmpdir(), "oz0-agent-test-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  writeFileSync(join(dir, "main.mjs"), `
import { FunctionTool, LlmAgent } from "@google/adk";
import { z } from "zod";
import { main } from ${JSON.stringify(HARNESS_URL)};
import { onTheGateway, runAgent } from ${JSON.stringify(pathToFileURL(join(ROOT, "src", "wiring.mjs")).href)};
const lookUpOrder = new FunctionTool({
  name: "look_up_order",
  description: "Look up an order.",
  parameters: z.object({ order_id: z.string() }),
  execute: async ({ order_id }) => { throw new Error("no order " + order_id); },
});
main((session) => runAgent(session, new LlmAgent({ name: "triage", tools: [lookUpOrder], ...onTheGateway(session) })));
`);
  const { events, code, run } = await s.session({ answer: allow, argv: [process.execPath, join(dir, "main.mjs")], request: s.request({ tools: ["look_up_order"] }) });
  assert.equal(code, 0, await run.log());
  const asked = events.find((e) => e.type === "permission_request");
  assert.deepEqual(events.filter((e) => e.type === "tool_result"), [{ type: "tool_result", id: asked?.id, tool: "look_up_order", error: "Error: Error in tool 'look_up_order': no order A-17" }]);
  assert.match(events.at(-1)?.output, /^The tool answered: .*no order A-17/);
});

test("an agent given as a tool (AgentTool) is asked by its name, then runs on the gateway", async (t) => {
  const s = await Sessions.start(t);
  s.api.script = (_body, answers, offered) => {
    if (!offered.includes("billing")) return { text: "Refunded the second charge.", calls: [] }; // billing's own call
    if (answers.length) return { text: "The tool answered: " + answers.join("; "), calls: [] };
    return { text: "", calls: [["billing", { request: "Refund the second charge." }]] };
  };
  const dir = mkdtempSync(join(tmpdir(), "oz0-agent-test-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  writeFileSync(join(dir, "main.mjs"), `
import { AgentTool, LlmAgent } from "@google/adk";
import { main } from ${JSON.stringify(HARNESS_URL)};
import { onTheGateway, runAgent } from ${JSON.stringify(pathToFileURL(join(ROOT, "src", "wiring.mjs")).href)};
main((session) => {
  const billing = new LlmAgent({ name: "billing", description: "Answers billing questions.", instruction: "You answer billing questions.", ...onTheGateway(session) });
  return runAgent(session, new LlmAgent({ name: "triage", tools: [new AgentTool({ agent: billing })], ...onTheGateway(session) }));
});
`);
  const { events, code, run } = await s.session({ answer: allow, argv: [process.execPath, join(dir, "main.mjs")], request: s.request({ tools: ["billing"] }) });
  assert.equal(code, 0, await run.log());
  assert.deepEqual(events.filter((e) => e.type === "permission_request").map((e) => [e.tool, e.arguments]), [["billing", { request: "Refund the second charge." }]]);
  assert.deepEqual(events.filter((e) => e.type === "tool_result").map((e) => [e.tool, e.result]), [["billing", "Refunded the second charge."]]);
  assert.equal(events.at(-1)?.output, "The tool answered: Refunded the second charge.");
  const calls = s.api.calls();
  assert.equal(calls.length, 3, "triage, billing, triage");
  for (const { path, headers } of calls) {
    assert.equal(path, "/gateway/anthropic/v1/messages");
    assert.equal(headers["x-api-key"], SESSION_KEY);
  }
  assert.match(systemText(calls[1].body), /You answer billing questions\./);
});
