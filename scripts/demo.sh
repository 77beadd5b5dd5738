#!/usr/bin/env bash
# The main job, offline: scaffold acme-triage into a temporary directory, lint it and run its
# tests, printing each step as a user would type it.
set -euo pipefail
OZ0=$(realpath "${1:-bin/oz0}")
oz0() { "$OZ0" "$@"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bold="" reset=""
if [ -t 1 ]; then bold=$'\033[1m' reset=$'\033[0m'; fi
step() { printf '\n%s$ %s%s\n' "$bold" "$*" "$reset"; "$@"; }

cd "$work"
step oz0 version
step oz0 plugin new acme-triage --template byo-agent --description "Sorts support tickets"
step cd acme-triage
step find . -type f -not -path '*/__pycache__/*' | sort
step oz0 plugin lint
PYTHONDONTWRITEBYTECODE=1 step python3 -m unittest discover -s tests -v
printf '\n%sdemo: scaffolded, linted and tested acme-triage in %s (removed on exit)%s\n' "$bold" "$work" "$reset"
