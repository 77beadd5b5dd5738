#!/usr/bin/env bash
# Installs what `make test` needs beyond Go and python3: pytest, to run the plugin template's
# tests the way plugin authors do, a C compiler, which `go test -race` needs (cgo), and Node with
# npm for the Node templates. Uses Debian's packages, as PyPI is not reachable everywhere. Then
# the Node templates' pinned dependencies, from npm into a cache shared across runs
# (scripts/node-deps.sh; nothing to do when cached).
set -euo pipefail
missing=()
command -v pytest >/dev/null 2>&1 || missing+=(python3-pytest)
command -v "${CC:-gcc}" >/dev/null 2>&1 || missing+=(gcc libc6-dev)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -eq 0 ]; then
  exec "$(dirname "$0")/node-deps.sh"
fi
if command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "test-deps: installing ${missing[*]}" >&2
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "test-deps: missing ${missing[*]}; install pytest (python3 -m pip install pytest, or your OS's python3-pytest), a C compiler (for go test -race) and Node 20 or later with npm" >&2
  exit 1
fi
exec "$(dirname "$0")/node-deps.sh"
