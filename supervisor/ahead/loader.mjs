// oz0's loader of a Node session made ahead of its job, run with `node --input-type=module -e`
// in the session's sandbox, in the plugin's directory (so that a package's name resolves in its
// node_modules as the harness's own imports resolve).
//
// Arguments: PLUGIN_DIR FILE ARGS... : the file the harness's command runs, and its arguments.
//
// 1. It reads what the harness imports (its file, and the plugin's own modules it reaches by
//    relative imports, read as text and never run) and imports the packages among them: nothing
//    of the plugin's own runs.
// 2. It says so on stdout, one line: {"type": "loaded", "modules": N, "failed": [...], "seconds": S}.
// 3. It reads one line on stdin, {"type": "bind", "env": {...}, "dir": "..."}: the job's
//    environment, which it sets, and the session's working directory, where it goes.
// 4. It imports the harness's file, as `node FILE` would run it, which reads the session request
//    on stdin as every harness does.

import { readFileSync, readSync, statSync, writeSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const MAX_FILES = 500;
const MAX_BYTES = 2 << 20;
const MAX_BIND = 1 << 20;

const [pluginDir, entry, ...args] = process.argv.slice(1);
const builtins = new Set(builtinModules);
const specifier = /\b(?:import|export)\s*(?:[\w*{}\s,$]*?\sfrom\s*)?["']([^"'\n]+)["']|\bimport\s*\(\s*["']([^"'\n]+)["']\s*\)/g;

/** The packages the harness imports, read from its files: their specifiers, in the order met. */
function packages() {
  const seen = new Set();
  const found = new Set();
  const queue = [resolve(entry)];
  while (queue.length > 0 && seen.size < MAX_FILES) {
    const file = queue.shift();
    if (seen.has(file)) continue;
    seen.add(file);
    let text;
    try {
      if (!statSync(file).isFile() || statSync(file).size > MAX_BYTES) continue;
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const m of text.matchAll(specifier)) {
      const spec = m[1] ?? m[2];
      if (spec.startsWith(".") || isAbsolute(spec)) {
        if (/\.[cm]?js$/.test(spec)) queue.push(resolve(dirname(file), spec));
      } else if (!spec.startsWith("node:") && !builtins.has(spec.split("/")[0]) && !/^[a-z]+:/.test(spec)) {
        found.add(spec);
      }
    }
  }
  return [...found];
}

/** The bind line, read a byte at a time: the session request after it is the harness's. */
function readBind() {
  const bytes = [];
  const one = Buffer.alloc(1);
  while (bytes.length < MAX_BIND) {
    let n;
    try {
      n = readSync(0, one, 0, 1, null);
    } catch (err) {
      if (/** @type {NodeJS.ErrnoException} */ (err).code === "EAGAIN") continue;
      throw err;
    }
    if (n === 0) process.exit(0); // the node let go of this session before its job
    if (one[0] === 0x0a) break;
    bytes.push(one[0]);
  }
  const message = JSON.parse(Buffer.from(bytes).toString("utf8"));
  if (message?.type !== "bind") throw new Error("oz0 loader: the first line is not a bind");
  return message;
}

const started = performance.now();
const loaded = [];
const failed = [];
for (const name of packages()) {
  try {
    await import(name);
    loaded.push(name);
  } catch (err) {
    failed.push(`${name}: ${String(err).slice(0, 200)}`);
  }
}
const report = { type: "loaded", modules: loaded.length, failed, seconds: Math.round(performance.now() - started) / 1000, at: Date.now() / 1000 };
writeSync(1, JSON.stringify(report) + "\n");
const message = readBind();
for (const [key, value] of Object.entries(message.env ?? {})) process.env[key] = value;
if (message.dir) process.chdir(message.dir);
process.argv = [process.argv[0], entry, ...args];
void pluginDir;
await import(pathToFileURL(entry).href);
