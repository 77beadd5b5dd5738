// @ts-check
// `node src/main.mjs`: one session of the harness protocol over stdin and stdout.
import { main } from "./harness.mjs";

// agent.mjs is imported here, once main() has taken stdout for the protocol: whatever it and the
// libraries it imports print goes to the job's log, and an import error (node_modules missing:
// run npm ci) ends the session with an error that names it.
main(async (session) => {
  const { run } = await import("./agent.mjs");
  return run(session);
});
