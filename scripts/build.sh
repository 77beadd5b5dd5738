#!/usr/bin/env bash
# Builds oz0 and says what it is doing: on a fresh machine `go build` is silent for minutes while it
# fetches modules and compiles some 300 packages, so every 5 s this prints a line with what is
# being fetched or compiled and a count. When Go's caches have it all (seconds) it prints nothing.
# Errors are printed as go prints them.
#
#   GO=go scripts/build.sh OUT [go build flags...]     (make build runs this)
set -uo pipefail
GO=${GO:-go}
out=$1
shift
every=5 # seconds between progress lines

# bash 3.2 (macOS's /bin/bash) says a read that timed out as 1, as it says the end of the input:
# progress() cannot tell them apart there, so that bash builds as go build does, quietly.
if [ "${BASH_VERSINFO[0]}" -lt 4 ]; then
  exec "$GO" build "$@" -o "$out" ./cmd/oz0
fi

# progress WHAT TOTAL: reads go's -v output (a package's path as its compile starts) and its
# "go: downloading" lines, and prints a counted line every $every seconds, whether or not a line
# came (a large package's compile and the link say nothing); any other line (an error) is passed
# on to stderr as it is.
progress() {
  local what=$1 total=$2 start=$SECONDS next=$((SECONDS + every)) fetched=0 built=0 last="" latest="" line rc part=""
  while :; do
    IFS= read -r -t 1 line
    rc=$?
    line=$part$line part=""
    # a timeout keeps what it read of an unfinished line: the rest comes with the next read
    if [ "$rc" -gt 128 ]; then part=$line line=""; fi
    if [ "$rc" -eq 0 ] || { [ "$rc" -eq 1 ] && [ -n "$line" ]; }; then
      case $line in
      "go: downloading "*) fetched=$((fetched + 1)) last=${line#go: downloading } ;;
      *[[:space:]]* | "#"* | "") printf '%s\n' "$line" >&2 ;;
      *) built=$((built + 1)) last=$line latest=$line ;;
      esac
    fi
    [ "$rc" -eq 1 ] && break # end of go's output
    if [ "$SECONDS" -ge "$next" ]; then
      next=$((SECONDS + every))
      if [ "$what" = fetch ]; then
        printf 'build: fetching modules: %d fetched (%s), %ds\n' "$fetched" "${last:-resolving}" $((SECONDS - start))
      elif [ "$latest" = github.com/orchestrator-zero/oz0/cmd/oz0 ]; then
        # go build -v names a package as its compile starts, and the main package last
        printf 'build: compiling oz0'"'"'s main package and linking %s: %d packages compiled, %d from the cache, %ds\n' "$out" "$built" $((total - built)) $((SECONDS - start))
      elif [ -n "$last" ]; then
        printf 'build: compiling: %d/%d packages (%s), %ds\n' "$built" "$total" "$last" $((SECONDS - start))
        last=""
      else
        printf 'build: compiling: %d/%d packages (a large one), %ds\n' "$built" "$total" $((SECONDS - start))
      fi
    fi
  done
}

# The packages oz0 is made of; listing them fetches the modules they come from.
pkgs=$(mktemp)
trap 'rm -f "$pkgs"' EXIT
started=$SECONDS
"$GO" list -deps "$@" ./cmd/oz0 2>&1 >"$pkgs" | progress fetch 0
[ "${PIPESTATUS[0]}" -eq 0 ] || exit 1
total=$(wc -l <"$pkgs")
# Once the fetch has said something, the compile says so at once, not only in 5 s.
if [ $((SECONDS - started)) -ge "$every" ]; then
  printf 'build: modules fetched; compiling the %d packages oz0 is made of\n' "$total"
fi

"$GO" build -v "$@" -o "$out" ./cmd/oz0 2>&1 | progress compile "$total"
exit "${PIPESTATUS[0]}"
