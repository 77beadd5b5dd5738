#!/usr/bin/env bash
# Every Python template, rendered with the longest plugin name there can be (63 characters, so
# that no line of a template is too long for any plugin's name), as its author gets it, on its real
# pinned framework: the guide's steps (uv lock, uv sync, uv run pytest, oz0 plugin lint), then
# oz0 plugin test (every scenario that applies passes), oz0 eval (the template's eval cases pass
# offline, from the recordings it ships), ruff (check and format, the template's
# [tool.ruff]) and pyright (standard mode, the template's [tool.pyright], against the .venv uv sync
# made), as a plugin author's editor and CI would.
#
#   scripts/lint-templates.sh [path/to/oz0] [TEMPLATE...]   (make lint-templates; make test runs it)
#
# uv and its download cache: scripts/uv-env.sh (scripts/test-deps.sh installs uv). ruff is the
# template's own dev dependency (`uv run ruff`), pinned in every template to $ruff_version below;
# pyright comes from npm, pinned in scripts/pylint/package-lock.json (scripts/test-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091 # scripts/uv-env.sh: uv on PATH, its cache
. scripts/uv-env.sh
OZ0=$(realpath "${1:-bin/oz0}")
shift || true
# The templates' tests that run oz0 itself (a plugin's own `oz0 plugin test`, say) find it on PATH.
PATH="$(dirname "$OZ0"):$PATH"
# The ruff every template pins in its dev group; the check below keeps them one version.
ruff_version=0.17.4
pyright="node $PWD/scripts/pylint/node_modules/pyright/index.js"
if [ ! -f scripts/pylint/node_modules/pyright/index.js ]; then
  echo "lint-templates: pyright is not installed; run scripts/test-deps.sh" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

templates=("$@")
if [ ${#templates[@]} -eq 0 ]; then
  mapfile -t templates < <("$OZ0" plugin templates --jq '.[].name')
fi

failed=()
for t in "${templates[@]}"; do
  # The Python templates; a Node template's types are checked by its own tests (npm run check).
  [ -f "scaffold/templates/$t/pyproject.toml" ] || continue
  name="lint-$t-"
  while [ ${#name} -lt 63 ]; do name+=x; done
  "$OZ0" plugin new "$name" --template "$t" --description "Sorts support tickets" --dir "$work" >/dev/null
  dir="$work/$name"
  echo "== $t"
  if ! grep -q "\"ruff==$ruff_version\"" "$dir/pyproject.toml"; then
    echo "$t: pyproject.toml's dev group must pin \"ruff==$ruff_version\", the ruff lint-templates checks with" >&2
    failed+=("$t")
    continue
  fi
  # Each step in turn, as the guide and the template's CI run them; the first that fails ends
  # this template's checks (the later ones need what it makes). (set -e does not hold in a
  # subshell that `if` tests, hence the exits.)
  if ! (
    cd "$dir" || exit 1
    step() { echo "-- $*"; "$@" || exit 1; }
    step uv lock --quiet
    step uv sync --quiet
    step uv run --quiet pytest -q -p no:cacheprovider
    step "$OZ0" plugin lint
    # Sessions import the framework first: allow for a slow machine.
    step "$OZ0" plugin test --timeout 5m
    # The eval cases the template ships, offline from their recordings (no key, no model).
    step "$OZ0" eval
    step uv run --quiet ruff check .
    step uv run --quiet ruff format --check .
    echo "-- pyright"
    $pyright --outputjson >"$work/pyright.json" || true
    python3 - "$work/pyright.json" <<'PY' || exit 1
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
  ); then
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "lint-templates: ${failed[*]} failed (above); fix the template under scaffold/templates" >&2
  exit 1
fi
