// @ts-check
/**
 * Your agent, on Google's Agent Development Kit (ADK) for TypeScript: run(session) builds it and
 * runs it on the job's input.
 *
 * Its model is the session's, through the node's gateway; each tool call is asked first, and a
 * refusal is the tool's answer; its text streams to the job. wiring.mjs does that: you write the
 * agent as ADK agents are written.
 */

import { FunctionTool, LlmAgent } from "@google/adk";
import { z } from "zod";

import { onTheGateway, runAgent, traced } from "./wiring.mjs";

export const notifyTeam = new FunctionTool({
  name: "notify_team",
  description: "Tell a team about a support ticket.",
  parameters: z.object({
    team: z.string().describe("billing, technical, account or general."),
    summary: z.string().describe("the ticket, in one sentence."),
  }),
  execute: ({ team, summary }) => `told the ${team} team: ${summary}`,
});

/** @param {import("./harness.mjs").Session} session */
export async function run(session) {
  const agent = new LlmAgent({
    name: "triage",
    tools: [notifyTeam], // list each under harness.tools in the agent definition too
    ...onTheGateway(session),
  });
  return traced(() => runAgent(session, agent));
}
