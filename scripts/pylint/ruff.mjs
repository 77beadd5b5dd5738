// ruff, from its WebAssembly build, over Python files: `ruff check` and `ruff format --check`
// with the settings given (a project's [tool.ruff] table, as JSON). oz0's make test runs it over
// every rendered template (scripts/lint-templates.sh), where the ruff binary cannot be installed.
//
//   node ruff.mjs [--write] SETTINGS_JSON FILE...
//
// Prints each finding as path:line:col: CODE message, and each file ruff format would change
// with the first line it would change; exits 1 when there is either. --write formats the files
// in place instead, template sources included: their {{.Package}} and {{.Name}} stand in
// strings and docstrings only, so a placeholder of the same width formats as they do.
import { PositionEncoding, Workspace } from "@astral-sh/ruff-wasm-nodejs";
import { readFileSync, writeFileSync } from "node:fs";

const args = process.argv.slice(2);
const write = args[0] === "--write";
const [settings, ...files] = write ? args.slice(1) : args;
if (!settings || files.length === 0) {
  console.error("usage: node ruff.mjs [--write] SETTINGS_JSON FILE...");
  process.exit(2);
}
const placeholders = [["{{.Package}}", "OZ0PACKAGE__"], ["{{.Name}}", "OZ0NAME__"]];
const swap = (s, from, to) => placeholders.reduce((acc, p) => acc.replaceAll(p[from], p[to]), s);
// Columns in code points, as ruff's command line counts them.
const workspace = new Workspace(JSON.parse(settings), PositionEncoding.Utf32);
let problems = 0;
for (const file of files) {
  if (write) {
    const source = swap(readFileSync(file, "utf8"), 0, 1);
    if (source.includes("{{")) {
      console.error(`${file}: a template action other than {{.Package}} and {{.Name}}; format it by hand`);
      process.exit(2);
    }
    writeFileSync(file, swap(workspace.format(source), 1, 0));
    continue;
  }
  const source = readFileSync(file, "utf8");
  for (const d of workspace.check(source)) {
    problems++;
    console.log(`${file}:${d.start_location.row}:${d.start_location.column}: ${d.code ?? "syntax"} ${d.message}`);
  }
  const formatted = workspace.format(source);
  if (formatted !== source) {
    problems++;
    console.log(`${file}: ruff format would change it:`);
    const was = source.split("\n");
    const now = formatted.split("\n");
    let first = 0;
    while (first < was.length && was[first] === now[first]) first++;
    console.log(`  line ${first + 1}: ${JSON.stringify(was[first] ?? "")} becomes ${JSON.stringify(now[first] ?? "")}`);
  }
}
if (!write) {
  console.log(`ruff ${Workspace.version()}: ${problems} problem(s) in ${files.length} file(s)`);
}
process.exit(problems > 0 ? 1 : 0);
