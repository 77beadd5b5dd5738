// @ts-check
/**
 * Your agent, on AWS Strands Agents (TypeScript): run(session) builds it and runs it on the job's
 * input.
 *
 * Its model is the session's, through the node's gateway; each tool call is asked first, and a
 * refusal is the tool's answer; its text streams to the job. wiring.mjs does that: you write the
 * agent as Strands agents are written.
 */

import { Agent, tool } from "@strands-agents/sdk";
import { z } from "zod";

import { onTheGateway, traced } from "./wiring.mjs";

export const notifyTeam = tool({
  name: "notify_team",
  description: "Tell a team about a support ticket.",
  inputSchema: z.object({
    team: z.string().describe("billing, technical, account or general."),
    summary: z.string().describe("the ticket, in one sentence."),
  }),
  callback: ({ team, summary }) => `told the ${team} team: ${summary}`,
});

/** @param {import("./harness.mjs").Session} session */
export async function run(session) {
  const agent = new Agent({
    systemPrompt: session.instructions, // prompts/<name>.md
    tools: [notifyTeam], // list each under harness.tools in the agent definition too
    ...(await onTheGateway(session)),
  });
  const result = await traced(() => agent.invoke(session.text));
  return result.toString();
}
