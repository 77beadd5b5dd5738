#!/usr/bin/env bash
# Installs what `make test` needs beyond Go and python3: pytest, to run the plugin template's
# tests the way plugin authors do, and a C compiler, which `go test -race` needs (cgo). Uses
# Debian's packages, as PyPI is not reachable everywhere.
set -euo pipefail
missing=()
command -v pytest >/dev/null 2>&1 || missing+=(python3-pytest)
command -v "${CC:-gcc}" >/dev/null 2>&1 || missing+=(gcc libc6-dev)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "test-deps: installing ${missing[*]}" >&2
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "test-deps: missing ${missing[*]}; install pytest (python3 -m pip install pytest, or your OS's python3-pytest) and a C compiler (for go test -race)" >&2
  exit 1
fi
