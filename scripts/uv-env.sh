# Sourced by the scripts that run uv (lint-templates.sh, frameworks-latest.sh): the pinned uv first
# on PATH, its download cache shared across runs and worktrees, the machine's python3 (uv never
# downloads one) and the fixed resolution date of scripts/uv.env. The testscripts set the same
# (cmd/oz0/uv_script_test.go). Fails, saying what to run, when uv is not installed.
# shellcheck shell=bash
# shellcheck disable=SC1091 # scripts/uv.env: KEY=VALUE lines
. "$(dirname "${BASH_SOURCE[0]}")/uv.env"
oz0_test_cache=${XDG_CACHE_HOME:-$HOME/.cache}/oz0-test
OZ0_UV_HOME=${OZ0_UV_HOME:-$oz0_test_cache/uv-$OZ0_UV_VERSION}
if [ ! -x "$OZ0_UV_HOME/bin/uv" ]; then
  echo "uv is missing (no $OZ0_UV_HOME/bin/uv): run scripts/test-deps.sh" >&2
  exit 1
fi
export PATH="$OZ0_UV_HOME/bin:$PATH"
export UV_CACHE_DIR=${UV_CACHE_DIR:-$oz0_test_cache/uv-cache}
export UV_PYTHON_DOWNLOADS=never
export UV_EXCLUDE_NEWER=$OZ0_UV_EXCLUDE_NEWER
