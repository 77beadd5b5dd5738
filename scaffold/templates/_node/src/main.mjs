// @ts-check
// `node src/main.mjs`: one session of the harness protocol over stdin and stdout.
import { existsSync } from "node:fs";
import module from "node:module";
import { fileURLToPath } from "node:url";

import { main } from "./harness.mjs";

// Node 22.1 and later keep the code they compile in a cache, which takes about a third off loading
// a framework the next time: here the plugin's node_modules/.cache, as each session's own
// directories are removed when it ends. A session in oz0 dev's sandbox sees the plugin read-only:
// it reads the cache that sessions outside one and `npm test` wrote for the same user, and writes
// nothing. Where Node has no compile cache (Node 20), or there is none for this user and the
// directory cannot be written, nothing changes.
const dependencies = new URL("../node_modules/", import.meta.url);
const { enableCompileCache } = /** @type { {enableCompileCache?: (dir: string) => unknown} } */ (module);
if (enableCompileCache && existsSync(dependencies)) {
  enableCompileCache(fileURLToPath(new URL(".cache/oz0-node-compile-cache", dependencies)));
}

// agent.mjs is imported here, once main() has taken stdout for the protocol: whatever it and the
// libraries it imports print goes to the job's log, and an import error (node_modules missing:
// run npm ci) ends the session with an error that names it.
main(async (session) => {
  const { run } = await import("./agent.mjs");
  return run(session);
});
