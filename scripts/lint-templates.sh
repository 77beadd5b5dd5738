#!/usr/bin/env bash
# The generated Python passes its own linters: renders every Python template with `oz0 plugin
# new` and runs ruff (check and format, with the template's [tool.ruff]) and pyright (standard
# mode, the template's [tool.pyright]) over it, as a plugin author's editor and CI would.
#
#   scripts/lint-templates.sh [path/to/oz0]     (make lint-templates; make test runs it)
#
# ruff runs from its WebAssembly build and pyright from its npm package, both pinned in
# scripts/pylint/package-lock.json and installed there by scripts/test-deps.sh. The framework
# templates import their framework, which `uv sync` installs and this machine has not: their
# stand-ins (tests/standins, the framework's module paths, classes and signatures) are put on the
# check's .venv path in its place, so pyright checks the wiring against them rather than
# skipping every unresolved import.
set -euo pipefail
cd "$(dirname "$0")/.."
OZ0=$(realpath "${1:-bin/oz0}")
tools=scripts/pylint/node_modules
if [ ! -d "$tools/pyright" ] || [ ! -d "$tools/@astral-sh/ruff-wasm-nodejs" ]; then
  echo "lint-templates: ruff and pyright are not installed; run scripts/test-deps.sh" >&2
  exit 1
fi
ruff="node $PWD/scripts/pylint/ruff.mjs"
pyright="node $PWD/$tools/pyright/index.js"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

failed=0
for t in $("$OZ0" plugin templates --jq '.[].name'); do
  # The Python templates; a Node template's types are checked by its own tests (npm run check).
  [ -f "scaffold/templates/$t/pyproject.toml" ] || continue
  # The longest name there can be (63 characters), so that no line of the template is too long
  # for any plugin's name.
  name="lint-$t-"
  while [ ${#name} -lt 63 ]; do name+=x; done
  "$OZ0" plugin new "$name" --template "$t" --description "Sorts support tickets" --dir "$work" >/dev/null
  dir="$work/$name"
  echo "== $t"
  # The [tool.ruff] table, as ruff's settings (python3 reads TOML).
  settings=$(python3 -c 'import json, sys, tomllib; print(json.dumps(tomllib.load(open(sys.argv[1], "rb"))["tool"]["ruff"]))' "$dir/pyproject.toml")
  mapfile -t files < <(cd "$dir" && find . -name '*.py' | sort)
  (cd "$dir" && $ruff "$settings" "${files[@]}") || failed=1
  site="$dir/.venv/lib/python3.10/site-packages" # pyright finds lib/python3.*/site-packages
  mkdir -p "$site"
  if [ -d "$dir/tests/standins" ]; then
    echo "$dir/tests/standins" > "$site/oz0-standins.pth"
  fi
  (cd "$dir" && $pyright --outputjson >"$work/pyright.json") || true
  python3 - "$work/pyright.json" <<'PY' || failed=1
import json, sys
report = json.load(open(sys.argv[1]))
for d in report["generalDiagnostics"]:
    if d["severity"] in ("error", "warning"):
        r = d["range"]["start"]
        print(f'{d["file"]}:{r["line"] + 1}:{r["character"] + 1}: {d["severity"]} {d.get("rule", "")} {d["message"]}')
s = report["summary"]
print(f'pyright {report["version"]}: {s["errorCount"]} error(s), {s["warningCount"]} warning(s) in {s["filesAnalyzed"]} file(s)')
sys.exit(1 if s["errorCount"] or s["warningCount"] or not s["filesAnalyzed"] else 0)
PY
done
if [ "$failed" != 0 ]; then
  echo "lint-templates: a template fails its own linters; fix the template under scaffold/templates" >&2
  exit 1
fi
