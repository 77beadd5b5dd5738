#!/usr/bin/env bash
# Framework drift: renders every template against the newest release of its framework and says,
# per template, what passes and what breaks, without touching the pins (make test-frameworks-latest;
# a weekly workflow runs it). Each template is rendered into a temporary directory:
#
#   - a Python template: its [project] dependencies' `==X` pins become `>=X`, and `uv lock` resolves
#     them without UV_EXCLUDE_NEWER (the tests' fixed date), so the newest releases; then the same
#     steps as lint-templates: uv sync, uv run pytest, oz0 plugin lint, oz0 plugin test.
#   - a Node template: npm install of the newest release of its framework (node_framework below:
#     @strands-agents/sdk, @google/adk; the other dependencies as locked), then npm run check, npm
#     test, oz0 plugin lint, oz0 plugin test.
#
#   scripts/frameworks-latest.sh [path/to/oz0] [TEMPLATE...]
#
# Prints a report (also written to $OZ0_TEST_ARTIFACTS/frameworks-latest.md when that is set) and
# exits 1 when a template breaks on its newest framework. Each step's output is in the report's
# log directory.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091 # scripts/uv-env.sh: uv on PATH, its cache
. scripts/uv-env.sh
# The newest releases: no resolution date.
unset UV_EXCLUDE_NEWER
OZ0=$(realpath "${1:-bin/oz0}")
shift || true
# The templates' tests that run oz0 itself (a plugin's own `oz0 plugin test`, say) find it on PATH.
PATH="$(dirname "$OZ0"):$PATH"
templates=("$@")
if [ ${#templates[@]} -eq 0 ]; then
  mapfile -t templates < <("$OZ0" plugin templates --jq '.[].name')
fi
work=$(mktemp -d)
logs=${OZ0_TEST_ARTIFACTS:+$OZ0_TEST_ARTIFACTS/frameworks-latest}
logs=${logs:-$work/logs}
rm -rf "$logs"
mkdir -p "$logs"
trap 'rm -rf "$work/plugins"' EXIT
report=$work/report.md
printf '| template | framework: pinned → newest | result |\n|---|---|---|\n' >"$report"

# step TEMPLATE NAME COMMAND...: runs a step in the current directory, its output in its log.
step() {
  local t=$1 name=$2
  shift 2
  echo "-- $t: $name" >&2
  "$@" >"$logs/$t.$name.log" 2>&1
}

# last_step TEMPLATE STEP...: the last of the steps that ran (has a log): where a run stopped.
last_step() {
  local t=$1 s last=""
  shift
  for s in "$@"; do
    if [ -f "$logs/$t.$s.log" ]; then last=$s; fi
  done
  echo "$last (log: $logs/$t.$last.log)"
}

# node_framework TEMPLATE: the npm package that is a Node template's framework.
node_framework() {
  case $1 in
    strands-ts) echo @strands-agents/sdk ;;
    adk-ts) echo @google/adk ;;
    *) echo "frameworks-latest: no framework is named for the Node template $1: add it to node_framework" >&2; return 1 ;;
  esac
}

failed=0
for t in "${templates[@]}"; do
  src=scaffold/templates/$t
  mkdir -p "$work/plugins/$t"
  "$OZ0" plugin new acme-triage --template "$t" --description "Sorts support tickets" --dir "$work/plugins/$t" >/dev/null
  dir=$work/plugins/$t/acme-triage
  broke=""
  versions=""
  if [ -f "$src/pyproject.toml" ]; then
    # `name==X` becomes `name>=X`: the newest release that resolves with the rest.
    cp "$dir/pyproject.toml" "$work/plugins/$t/pyproject.pinned.toml"
    python3 - "$dir/pyproject.toml" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
head, sep, rest = text.partition("[project]")
body, sep2, tail = rest.partition("\n[")
body = re.sub(r'"([A-Za-z0-9_.-]+(?:\[[^\]]*\])?)==', r'"\1>=', body)
open(path, "w").write(head + sep + body + sep2 + tail)
PY
    steps=(uv-lock uv-sync pytest plugin-lint plugin-test)
    if ! (
      cd "$dir" || exit 1
      step "$t" uv-lock uv lock || exit 1
      step "$t" uv-sync uv sync || exit 1
      step "$t" pytest uv run pytest -q -p no:cacheprovider || exit 1
      step "$t" plugin-lint "$OZ0" plugin lint || exit 1
      step "$t" plugin-test "$OZ0" plugin test --timeout 5m || exit 1
    ); then
      broke=$(last_step "$t" "${steps[@]}")
    fi
    # pinned → newest, for each pinned dependency
    versions=$(python3 - "$work/plugins/$t/pyproject.pinned.toml" "$dir/uv.lock" <<'PY'
import os, re, sys, tomllib
deps = tomllib.load(open(sys.argv[1], "rb"))["project"].get("dependencies", [])
lock = {}
if os.path.exists(sys.argv[2]):
    lock = {p["name"]: p.get("version", "?") for p in tomllib.load(open(sys.argv[2], "rb"))["package"]}
out = []
for d in deps:
    m = re.match(r"^([A-Za-z0-9_.-]+)(\[[^\]]*\])?==([^;\s]+)", d)
    if m:
        name = re.sub(r"[-_.]+", "-", m.group(1)).lower()
        out.append(f"{m.group(1)} {m.group(3)} → {lock.get(name, '?')}")
print(", ".join(out) or "no framework (the standard library)")
PY
)
  elif [ -f "$src/package.json" ]; then
    framework=$(node_framework "$t")
    pinned=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["dependencies"][sys.argv[2]])' "$dir/package.json" "$framework")
    steps=(npm-ci npm-install npm-check npm-test plugin-lint plugin-test)
    if ! (
      cd "$dir" || exit 1
      step "$t" npm-ci npm ci --no-audit --no-fund --loglevel=error || exit 1
      step "$t" npm-install npm install --no-audit --no-fund --loglevel=error "$framework@latest" || exit 1
      step "$t" npm-check npm run check || exit 1
      step "$t" npm-test npm test || exit 1
      step "$t" plugin-lint "$OZ0" plugin lint || exit 1
      step "$t" plugin-test "$OZ0" plugin test --timeout 5m || exit 1
    ); then
      broke=$(last_step "$t" "${steps[@]}")
    fi
    newest=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' "$dir/node_modules/$framework/package.json" 2>/dev/null || echo "?")
    versions="$framework $pinned → $newest"
  else
    continue
  fi
  if [ -n "$broke" ]; then
    failed=1
    printf '| %s | %s | breaks at %s |\n' "$t" "$versions" "$broke" >>"$report"
  else
    printf '| %s | %s | passes |\n' "$t" "$versions" >>"$report"
  fi
done
cat "$report"
if [ -n "${OZ0_TEST_ARTIFACTS:-}" ]; then
  cp "$report" "$OZ0_TEST_ARTIFACTS/frameworks-latest.md"
fi
exit "$failed"
