// @ts-check
/**
 * agent.mjs and wiring.mjs on the real Strands (node_modules, after npm ci), run as a node runs
 * them (the harness over a pipe) against a fake model API that calls the agent's tool and then
 * says what it answered, in each format the manifest lists.
 */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { INSTRUCTIONS, JOB, MODEL_NAME, NAME, ROOT, SESSION_KEY, TICKET, Sessions, allow, deny, says } from "./sessions.mjs";

const MANIFEST = readFileSync(join(ROOT, "oz0-plugin.yaml"), "utf8");
const FORMATS = (MANIFEST.match(/formats:\s*\[([^\]]*)\]/)?.[1] ?? "").split(",").map((f) => f.trim()).filter(Boolean);
/** The arguments the fake model calls the tool with. */
const ASKED = { team: "billing", summary: "A customer was charged twice." };
const ANSWER = "told the billing team: A customer was charged twice.";

/** @param {import("node:test").TestContext} t */
async function sessions(t) {
  const s = await Sessions.start(t);
  s.api.toolArguments = ASKED;
  return s;
}

/**
 * @param {Sessions} s
 * @param {string} format
 */
function requestIn(s, format) {
  return s.request({ model: { name: MODEL_NAME, format, record: "fake" } });
}

test("the manifest lists the formats the wiring speaks", () => {
  assert.deepEqual(FORMATS, ["anthropic-messages", "openai-chat"]);
});

for (const format of FORMATS) {
  test(`${format}: a tool call is asked, runs and is answered; the text streams`, async (t) => {
    const s = await sessions(t);
    const { events, code, run } = await s.session({ answer: allow, request: requestIn(s, format) });
    assert.equal(code, 0, await run.log());
    const asked = events.filter((e) => e.type === "permission_request");
    assert.deepEqual(asked.map((e) => [e.tool, e.arguments]), [["notify_team", ASKED]], await run.log());
    assert.deepEqual(events.filter((e) => e.type === "tool_result"), [{ type: "tool_result", id: asked[0].id, tool: "notify_team", result: ANSWER }]);
    assert.deepEqual(events.at(-1), { type: "result", output: `The tool answered: ${ANSWER}` });
    assert.equal(says(events), `The tool answered: ${ANSWER}`);
    assert.ok(events.filter((e) => e.type === "say").length > 1, "the text came in one piece: it was not streamed");
  });

  test(`${format}: a refusal is the tool's answer, and the agent goes on`, async (t) => {
    const s = await sessions(t);
    const { events, code, run } = await s.session({ answer: deny("billing is told by a person"), request: requestIn(s, format) });
    assert.equal(code, 0, await run.log());
    assert.deepEqual(events.filter((e) => e.type === "tool_result"), []);
    assert.equal(events.at(-1)?.output, "The tool answered: refused: billing is told by a person");
  });

  test(`${format}: the model client is on the gateway`, async (t) => {
    const s = await sessions(t);
    const { code, run } = await s.session({ answer: allow, request: requestIn(s, format) });
    assert.equal(code, 0, await run.log());
    const calls = s.api.calls();
    assert.equal(calls.length, 2, "a call with the tool offered, one after it");
    for (const { path, headers, body } of calls) {
      assert.equal(headers["oz0-job"], JOB);
      assert.equal(headers["oz0-agent"], NAME);
      assert.equal(body.model, MODEL_NAME);
      if (format === "anthropic-messages") {
        assert.equal(path, "/gateway/anthropic/v1/messages");
        assert.equal(headers["x-api-key"], SESSION_KEY);
        const system = typeof body.system === "string" ? body.system : body.system.map((/** @type {any} */ b) => b.text).join("");
        assert.equal(system, INSTRUCTIONS);
        assert.deepEqual(body.tools.map((/** @type {any} */ t) => t.name), ["notify_team"]);
      } else {
        // Chat Completions, not the Responses API (OpenAIModel's default).
        assert.equal(path, "/gateway/openai/chat/completions");
        assert.equal(headers.authorization, `Bearer ${SESSION_KEY}`);
        assert.deepEqual(body.messages[0], { role: "system", content: INSTRUCTIONS });
        assert.deepEqual(body.tools.map((/** @type {any} */ t) => t.function.name), ["notify_team"]);
      }
    }
    assert.ok(JSON.stringify(calls[0].body.messages).includes(TICKET));
  });

  test(`${format}: a limit is not retried`, async (t) => {
    const s = await sessions(t);
    s.api.status = 429; // the gateway's answer past limits.max_steps
    const { events, code, run } = await s.session({ request: requestIn(s, format) });
    assert.equal(code, 1);
    assert.equal(events.at(-1)?.type, "error", await run.log());
    assert.equal(s.api.calls().length, 1, "the refused call was retried");
  });
}

test("the tool runs with the arguments the job allowed", async (t) => {
  const s = await sessions(t);
  const { events, code, run } = await s.session({
    answer: (run, event) => run.send({ type: "permission", id: event.id, decision: "allow", arguments: { team: "account", summary: "changed by a hook" } }),
  });
  assert.equal(code, 0, await run.log());
  assert.equal(events.find((e) => e.type === "tool_result")?.result, "told the account team: changed by a hook");
  assert.equal(events.at(-1)?.output, "The tool answered: told the account team: changed by a hook");
});

test("the plugin reports what a tool returned: text, or JSON as JSON; a refusal is an answer", async () => {
  const { AskTheJob } = await import("../src/wiring.mjs");
  const { JsonBlock, TextBlock, ToolResultBlock } = await import("@strands-agents/sdk");
  /** @type {unknown[][]} */
  const reported = [];
  let refuse = false;
  const session = /** @type {any} */ ({
    ask: async (/** @type {string} */ _tool, /** @type {Record<string, unknown>} */ args) => {
      if (refuse) throw new (await import("../src/harness.mjs")).Refused("not now");
      return { arguments: { ...args, changed: true }, done: (/** @type {unknown} */ r) => reported.push(["done", r]), failed: (/** @type {unknown} */ e) => reported.push(["failed", e]) };
    },
  });
  const plugin = new AskTheJob(session);
  /** @param {string} id @param {any[]} content @param {"success" | "error"} [status] */
  const call = async (id, content, status = "success") => {
    /** @type {any} */
    const before = { toolUse: { name: "notify_team", toolUseId: id, input: { team: "billing" } }, cancel: false };
    await plugin.before(before);
    /** @type {any} */
    const after = { toolUse: before.toolUse, result: new ToolResultBlock({ toolUseId: id, status: before.cancel ? "error" : status, content: before.cancel ? [new TextBlock(before.cancel)] : content }) };
    plugin.after(after);
    return { before, after };
  };
  const { before } = await call("t1", [new TextBlock("told")]);
  assert.deepEqual(before.toolUse.input, { team: "billing", changed: true });
  await call("t2", [new JsonBlock({ json: { told: "billing" } })]);
  await call("t3", [new JsonBlock({ json: { $value: [1, 2] } })]);
  await call("t4", [new TextBlock("the team is away")], "error");
  assert.deepEqual(reported, [["done", "told"], ["done", { told: "billing" }], ["done", [1, 2]], ["failed", "the team is away"]]);

  refuse = true;
  const { after } = await call("t5", []);
  assert.equal(after.result.status, "success");
  assert.deepEqual(after.result.content.map((/** @type {any} */ b) => b.text), ["refused: not now"]);
  assert.equal(reported.length, 4);
});
