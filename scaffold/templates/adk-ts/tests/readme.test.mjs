// @ts-check
/**
 * README.md's example, run as it is written there, whatever agent.mjs is: triage hands a billing
 * question over to a second agent, billing; their tools are of each kind ADK takes (a
 * FunctionTool, an async one, one that uses ADK's Context, an MCP server's). Each call is asked
 * first and runs with the arguments the job allowed, or is refused; what the context tool keeps
 * in ADK's state reaches billing's instruction; billing's text is said under its name; an MCP
 * server that cannot start fails the session, saying so.
 */

import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { INSTRUCTIONS, ROOT, Sessions, allow, deny, says } from "./sessions.mjs";

/** @typedef {[string, Record<string, unknown>][]} Calls */

/** @type {Calls} */
const TRIAGE = [
  ["notify_team", { team: "billing", summary: "A customer was charged twice." }],
  ["note_for_billing", { note: "the second charge is to be refunded" }],
];
/** @type {Calls} */
const BILLING = [
  ["look_up_order", { order_id: "A-17" }],
  ["open_ticket", { team: "billing", priority: 2 }],
];

/**
 * The README's code blocks whose first line names a file of src/ ("// src/agent.mjs"), by name.
 * @returns {Record<string, string>}
 */
export function readmeFiles() {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  /** @type {Record<string, string>} */
  const files = {};
  for (const [, code] of readme.matchAll(/^```js\n(.*?)^```$/gms)) {
    const name = code.match(/^\/\/ src\/(\S+)\n/)?.[1];
    if (name) files[name] = code;
  }
  return files;
}

/**
 * A copy of the plugin with files written over its src/ (a null removes one), its node_modules
 * the plugin's; the argv that runs its harness.
 * @param {import("node:test").TestContext} t
 * @param {Record<string, string | null>} files
 */
function pluginWith(t, files) {
  const dir = mkdtempSync(join(tmpdir(), "oz0-readme-test-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(join(ROOT, "src"), join(dir, "src"), { recursive: true });
  cpSync(join(ROOT, "package.json"), join(dir, "package.json"));
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  for (const [name, code] of Object.entries(files)) {
    if (code === null) rmSync(join(dir, "src", name), { force: true });
    else writeFileSync(join(dir, "src", name), code);
  }
  return [process.execPath, join(dir, "src", "main.mjs")];
}

/** @param {any} body */
function systemText(body) {
  return typeof body.system === "string" ? body.system : (body.system ?? []).map((/** @type {any} */ b) => b.text).join("");
}

/**
 * Sessions whose model is triage, which calls its tools and hands over to billing, and billing,
 * which calls its own, then says what they answered; the system prompts each agent's calls had.
 * @param {import("node:test").TestContext} t
 */
async function example(t) {
  const s = await Sessions.start(t);
  const systems = { triage: /** @type {string[]} */ ([]), billing: /** @type {string[]} */ ([]) };
  s.api.script = (body, answers) => {
    const system = systemText(body);
    if (system.includes(INSTRUCTIONS)) {
      systems.triage.push(system);
      if (!answers.length) return { text: "", calls: TRIAGE };
      // ADK's hand-over, by the argument it declares (agentName in ADK for TypeScript).
      const transfer = body.tools.find((/** @type {any} */ t) => t.name === "transfer_to_agent");
      return { text: "", calls: [["transfer_to_agent", { [Object.keys(transfer.input_schema.properties)[0]]: "billing" }]] };
    }
    systems.billing.push(system);
    if (systems.billing.length === 1) return { text: "", calls: BILLING };
    return { text: "The tool answered: " + answers.join("; "), calls: [] };
  };
  return { s, systems };
}

const FILES = readmeFiles();

test("the README's example is its agent.mjs and tickets_server.mjs", () => {
  assert.deepEqual(Object.keys(FILES).sort(), ["agent.mjs", "tickets_server.mjs"]);
});

test("each tool is asked and runs; billing speaks for itself", async (t) => {
  const { s, systems } = await example(t);
  const { events, code, run } = await s.session({ answer: allow, argv: pluginWith(t, FILES) });
  assert.equal(code, 0, await run.log());
  const asked = events.filter((e) => e.type === "permission_request").map((e) => [e.tool, e.arguments]);
  assert.deepEqual(asked, [...TRIAGE, ...BILLING], await run.log());
  const told = Object.fromEntries(events.filter((e) => e.type === "tool_result").map((e) => [e.tool, JSON.stringify(e.result ?? e.error)]));
  assert.equal(told.notify_team, JSON.stringify("told the billing team: A customer was charged twice."));
  assert.equal(told.note_for_billing, JSON.stringify("noted: the second charge is to be refunded"));
  assert.equal(told.look_up_order, JSON.stringify("order A-17: charged twice"));
  assert.match(told.open_ticket, /opened a priority 2 ticket for the billing team/);
  // Triage's instruction is the agent's (prompts/); billing's its own, with the note the context
  // tool kept in ADK's state.
  assert.ok(systems.triage[0].includes(INSTRUCTIONS));
  const billing = systems.billing[0];
  assert.match(billing, /You answer billing questions\. The note on the ticket: the second charge is to be refunded/);
  assert.ok(!billing.includes(INSTRUCTIONS), billing);
  const answer = events.at(-1)?.output;
  assert.ok(answer.startsWith("The tool answered: order A-17: charged twice; "), answer);
  assert.equal(says(events), `[billing] ${answer}`);
});

test("refused calls do not run", async (t) => {
  const { s, systems } = await example(t);
  const { events, code, run } = await s.session({ answer: deny("not today"), argv: pluginWith(t, FILES) });
  assert.equal(code, 0, await run.log());
  assert.deepEqual(events.filter((e) => e.type === "permission_request").map((e) => e.tool), [...TRIAGE, ...BILLING].map(([name]) => name));
  assert.deepEqual(events.filter((e) => e.type === "tool_result"), []);
  assert.match(systems.billing[0], /The note on the ticket: $/m);
  assert.equal(events.at(-1)?.output, "The tool answered: refused: not today; refused: not today");
});

test("an MCP server that cannot start fails the session, saying so", async (t) => {
  const { s } = await example(t);
  const { events, code, run } = await s.session({ answer: allow, argv: pluginWith(t, { ...FILES, "tickets_server.mjs": null }) });
  assert.equal(code, 1);
  assert.equal(events.at(-1)?.type, "error", await run.log());
  assert.match(events.at(-1)?.message, /agent billing: its MCPToolset \(`.*tickets_server\.mjs`\) could not load its tools/);
  assert.deepEqual(s.api.calls(), [], "the agent ran without the server's tools");
});
