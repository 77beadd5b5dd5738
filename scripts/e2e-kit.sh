#!/usr/bin/env bash
# The guide, end to end and offline, as a user types it: scaffold acme-triage, test and lint it,
# check it against the protocol, start `oz0 dev` on the fake model, run the guide's ticket, then
# set the tenant's key with the provider's upstream pointed at `oz0 fake-model serve` and run it
# again; then uncomment requires_approval in the agent, and the next run waits for a person's
# approval before it tells the team. Every step is printed; the servers are stopped at the end,
# whatever happens.
#
#   scripts/e2e-kit.sh [path/to/oz0]     (make demo builds oz0 and runs this)
set -euo pipefail
OZ0=$(realpath "${1:-bin/oz0}")
PATH="$(dirname "$OZ0"):$PATH"
export PATH
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

bold="" dim="" reset=""
if [ -t 1 ]; then bold=$'\033[1m' dim=$'\033[2m' reset=$'\033[0m'; fi
shown() { # the command as a user would type it: arguments with spaces in double quotes
  local out="" a
  for a in "$@"; do case "$a" in *[[:space:]]*) out+=" \"$a\"" ;; *) out+=" $a" ;; esac; done
  printf '%s' "${out# }"
}
step() { printf '\n%s$ %s%s\n' "$bold" "$(shown "$@")" "$reset"; "$@"; }
note() { printf '%s# %s%s\n' "$dim" "$*" "$reset"; }
waitfor() { # waitfor FILE: until a background server has written it
  for _ in $(seq 200); do [ -s "$1" ] && return 0; sleep 0.05; done
  echo "e2e-kit: timed out waiting for $1" >&2; exit 1
}
polluntil() { # polluntil WHAT CMD...: until CMD succeeds, asking every 50 ms for at most 10 s
  local what=$1; shift
  for _ in $(seq 200); do "$@" && return 0; sleep 0.05; done
  echo "e2e-kit: timed out waiting for $what" >&2; exit 1
}
# The guide's answer to its ticket, as `oz0 run` prints it.
guide_answer='acme-triage: Sorting the ticket.
acme-triage → notify_team {"summary":"I was charged twice for my order","team":"billing"}
acme-triage ← notify_team told the billing team: I was charged twice for my order
billing: Sorry about the double charge; we have refunded the second one.'

cd "$work"
step oz0 plugin new acme-triage --template byo-agent --description "Sorts support tickets"
step cd acme-triage
if command -v uv >/dev/null 2>&1 && uv --version >/dev/null 2>&1; then
  step uv lock
  step uv sync
  step uv run pytest -q
else
  note "uv is not installed: the template's tests run with the standard library instead"
  PYTHONDONTWRITEBYTECODE=1 step python3 -m unittest discover -s tests
fi
step oz0 plugin lint
step oz0 plugin test

note "oz0 dev: a dev server and a node with the plugin, on the fake model (no provider key yet)"
oz0 dev --ready-file "$work/ctx" >"$work/dev.log" 2>"$work/dev.err" &
pids+=($!)
waitfor "$work/ctx"
sed 's/^/  | /' "$work/dev.log"
OZ0_CONTEXT=$(cat "$work/ctx")
export OZ0_CONTEXT
step oz0 run acme-triage "I was charged twice for my order"

note "now the tenant's key, with the provider's upstream pointed at a fake model API"
oz0 fake-model serve --ready-file "$work/fm.url" >"$work/fm.log" 2>&1 &
pids+=($!)
waitfor "$work/fm.url"
export ANTHROPIC_API_KEY="sk-ant-e2e-kit-not-a-real-key"
# shellcheck disable=SC2016 # the command as the guide shows it, $ANTHROPIC_API_KEY unexpanded
printf '\n%s$ printf %%s "$ANTHROPIC_API_KEY" | oz0 secret set ANTHROPIC_API_KEY --base-url %s%s\n' "$bold" "$(cat "$work/fm.url")" "$reset"
printf %s "$ANTHROPIC_API_KEY" | oz0 secret set ANTHROPIC_API_KEY --base-url "$(cat "$work/fm.url")"
step oz0 run acme-triage "I was charged twice for my order"

note "uncomment requires_approval: [notify_team] in the agent: the next run waits for a person"
agent=agents/acme-triage.yaml
sed 's/^\( *\)# requires_approval: \[notify_team\]/\1requires_approval: [notify_team]/' "$agent" >"$work/agent.yaml"
mv "$work/agent.yaml" "$agent"
step grep -n 'requires_approval' "$agent"
grep -q '^ *requires_approval: \[notify_team\]' "$agent" || { echo "e2e-kit: $agent has no requires_approval line to uncomment" >&2; exit 1; }
polluntil "oz0 dev to reload acme-triage" grep -q '^reload: acme-triage reloaded' "$work/dev.log"
sed -n 's/^reload: /  | reload: /p' "$work/dev.log"
printf '\n%s$ %s &%s\n' "$bold" "$(shown oz0 run acme-triage "I was charged twice for my order")" "$reset"
oz0 run acme-triage "I was charged twice for my order" >"$work/run.out" 2>"$work/run.err" &
run=$!
pids+=("$run")
waiting() { [ -n "$(oz0 approval list --jq '.[].id')" ]; }
polluntil "the run's approval" waiting
step oz0 approval list
step oz0 approval approve "$(oz0 approval list --jq '.[0].id')"
status=0
wait "$run" || status=$?
pids=("${pids[@]:0:${#pids[@]}-1}") # the run has ended: no longer for cleanup to stop
cat "$work/run.err" "$work/run.out"
if [ "$status" -ne 0 ] || [ "$(cat "$work/run.out")" != "$guide_answer" ]; then
  echo "e2e-kit: the approved run did not end with the guide's answer (exit $status)" >&2; exit 1
fi
step oz0 job list
printf '\n%se2e-kit: the guide ran offline, end to end%s\n' "$bold" "$reset"
