#!/usr/bin/env bash
# Installs the pinned dependencies of each Node template (its package-lock.json, npm ci) into a
# cache shared across runs, where oz0's tests link them into the plugins they scaffold (the
# testscripts' `nodemodules` command): the template's own tests, `oz0 plugin test` and runs
# under `oz0 dev` use the real framework. One directory per lock file's content, so a changed
# lock gets a fresh install and worktrees with different locks do not disturb each other; a
# complete install is marked, and a cached one costs nothing.
#
#   scripts/node-deps.sh [TEMPLATE...]      (default: every template with a package-lock.json)
# The cache: $OZ0_NODE_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/oz0-test/node.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${OZ0_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/oz0-test/node}
templates=("$@")
if [ ${#templates[@]} -eq 0 ]; then
  for lock in scaffold/templates/*/package-lock.json; do
    [ -e "$lock" ] && templates+=("$(basename "$(dirname "$lock")")")
  done
fi

sha256() { if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi; }

for t in "${templates[@]}"; do
  src=scaffold/templates/$t
  # The key is what internal/nodedeps computes: sha256 of package.json, then the lock.
  key=$(cat "$src/package.json" "$src/package-lock.json" | sha256 | cut -c1-16)
  dir=$cache/$t-$key
  if [ -e "$dir/node_modules/.oz0-complete" ]; then
    continue
  fi
  echo "node-deps: installing $t's dependencies (npm ci) into $dir" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  # The template's two files, with the name and description a plugin gets; npm ci checks that
  # they agree and installs exactly the lock.
  sed -e 's/{{\.Name}}/acme-triage/g' -e 's/{{quote \.Description}}/"Sorts support tickets"/g' \
    "$src/package.json" > "$dir/package.json"
  sed -e 's/{{\.Name}}/acme-triage/g' "$src/package-lock.json" > "$dir/package-lock.json"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  touch "$dir/node_modules/.oz0-complete"
done
