#!/usr/bin/env bash
# Records the eval cases every template ships (scaffold/templates/_agent/evals/triage.yaml) into
# scaffold/templates/<template>/evals/recordings/triage/: each template rendered as acme-triage,
# its dependencies installed (uv sync, npm ci), then `oz0 eval --update` on a "live" model that is
# scaffold/evals/provider.yaml served by `oz0 fake-model serve`, and the recordings copied back
# with the plugin's name as the template's {{.Name}}. Run it after a change to a template that
# changes what it asks the model; make test (scripts/lint-templates.sh) replays them offline.
#
#   scripts/record-template-evals.sh [path/to/oz0] [TEMPLATE...]
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091 # scripts/uv-env.sh: uv on PATH, its cache
. scripts/uv-env.sh
OZ0=$(realpath "${1:-bin/oz0}")
shift || true
PATH="$(dirname "$OZ0"):$PATH"
work=$(mktemp -d)
fm=
cleanup() {
  if [ -n "$fm" ]; then kill "$fm" 2>/dev/null || true; wait "$fm" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

templates=("$@")
if [ ${#templates[@]} -eq 0 ]; then
  mapfile -t templates < <("$OZ0" plugin templates --jq '.[].name')
fi

"$OZ0" fake-model serve --script scaffold/evals/provider.yaml --ready-file "$work/fm.url" >/dev/null &
fm=$!
for _ in $(seq 100); do [ -s "$work/fm.url" ] && break; sleep 0.1; done
url=$(cat "$work/fm.url")
export OZ0_ANTHROPIC_BASE_URL=$url OZ0_OPENAI_BASE_URL=$url/v1
export ANTHROPIC_API_KEY=sk-ant-recording OPENAI_API_KEY=sk-recording

for t in "${templates[@]}"; do
  echo "== $t"
  "$OZ0" plugin new acme-triage --template "$t" --description "Sorts support tickets" --dir "$work/$t" >/dev/null
  dir="$work/$t/acme-triage"
  (
    cd "$dir"
    if [ -f pyproject.toml ] && [ "$t" != byo-agent ]; then uv lock --quiet && uv sync --quiet; fi
    if [ -f package.json ]; then npm ci --silent; fi
    "$OZ0" eval --update
  )
  out="scaffold/templates/$t/evals/recordings/triage"
  rm -rf "$out"
  mkdir -p "$out"
  for f in "$dir"/evals/recordings/triage/*.json; do
    sed 's/acme-triage/{{.Name}}/g' "$f" >"$out/$(basename "$f")"
  done
done
