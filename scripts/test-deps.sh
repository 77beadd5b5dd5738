#!/usr/bin/env bash
# Installs what `make test` needs beyond Go and python3: pytest, to run the plugin template's
# tests the way plugin authors do. Uses Debian's package, as PyPI is not reachable everywhere.
set -euo pipefail
if command -v pytest >/dev/null 2>&1; then
  exit 0
fi
if command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "test-deps: installing python3-pytest" >&2
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-pytest >/dev/null
else
  echo "test-deps: pytest is missing; install it (python3 -m pip install pytest, or your OS's python3-pytest)" >&2
  exit 1
fi
