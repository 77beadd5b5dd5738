#!/usr/bin/env bash
# Prints the directory to put first on PATH so that the tests run the Node of scripts/node.env:
# the one scripts/test-deps.sh installed into the tests' cache, when the machine's node is older
# (with a trailing ":"); nothing when the machine's node is new enough, or none was installed.
#   PATH="$(scripts/node-path.sh)$PATH" go test ./...
set -euo pipefail
# shellcheck disable=SC1091 # scripts/node.env: KEY=VALUE lines
. "$(dirname "$0")/node.env"
major=$(node --version 2>/dev/null | sed -n 's/^v\([0-9]*\)\..*/\1/p')
if [ -n "$major" ] && [ "$major" -ge "$OZ0_NODE_MAJOR" ]; then
  exit 0
fi
bin=${XDG_CACHE_HOME:-$HOME/.cache}/oz0-test/node-$OZ0_NODE_VERSION/bin
if [ -x "$bin/node" ]; then
  printf '%s:' "$bin"
fi
