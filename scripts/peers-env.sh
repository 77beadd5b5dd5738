#!/usr/bin/env bash
# Installs the peers that the peers benchmark (cmd/oz0/peers_bench_test.go, make bench-peers)
# runs beside `oz0 dev`: `adk web` (google-adk) and `langgraph dev` (langgraph-cli[inmem]), each
# pinned by its pyproject.toml under scripts/peers/, into an environment of its own made by uv in
# the tests' cache, once. One directory per content of the pyproject.toml and scripts/uv.env (the
# uv and its resolution date), so a changed pin gets a fresh install; a complete one is marked,
# and a cached one costs nothing. Afterwards the benchmark needs no network for the peers.
#
#   scripts/peers-env.sh [PEER...]      (default: every directory under scripts/peers)
# The cache: ${XDG_CACHE_HOME:-$HOME/.cache}/oz0-test/peers/PEER-KEY (cmd/oz0 computes the same KEY).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091 # scripts/uv-env.sh: uv on PATH, its cache
. scripts/uv-env.sh
cache=${XDG_CACHE_HOME:-$HOME/.cache}/oz0-test/peers
peers=("$@")
if [ ${#peers[@]} -eq 0 ]; then
  for p in scripts/peers/*/pyproject.toml; do
    peers+=("$(basename "$(dirname "$p")")")
  done
fi

sha256() { if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi; }

for p in "${peers[@]}"; do
  src=scripts/peers/$p/pyproject.toml
  if [ ! -f "$src" ]; then
    echo "peers-env: no peer $p (no $src)" >&2
    exit 2
  fi
  key=$(cat "$src" scripts/uv.env | sha256 | cut -c1-16)
  dir=$cache/$p-$key
  if [ -e "$dir/.oz0-complete" ]; then
    continue
  fi
  echo "peers-env: installing $p ($src) with uv into $dir" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  cp "$src" "$dir/pyproject.toml"
  # Bytecode compiled now: the peer's server imports its framework at every start, as an
  # installed tool's does (pip and uv tool install compile it).
  (cd "$dir" && uv lock --quiet && uv sync --quiet --frozen --compile-bytecode)
  touch "$dir/.oz0-complete"
done
