#!/usr/bin/env bash
# Installs a release of oz0, verified against the release's checksums.txt (SHA-256), for Linux
# and macOS on amd64 and arm64. The GitHub Action (action.yml) runs it; any CI can.
#
#   scripts/install.sh [VERSION] [DIR]
#
# VERSION is 0.3.0, v0.3.0 or latest (the default); DIR is where the oz0 binary goes (default:
# ~/.local/bin). In GitHub Actions, DIR is added to the PATH of the steps that follow and the
# version becomes the step's output `version`. OZ0_RELEASES is the releases' base URL (a
# mirror's, or a directory's file:// URL in tests).
set -euo pipefail
version=${1:-latest}
dir=${2:-$HOME/.local/bin}
releases=${OZ0_RELEASES:-https://github.com/orchestrator-zero/oz0/releases}
fail() { echo "install.sh: $*" >&2; exit 1; }

if [ "$version" = latest ]; then
  # /latest redirects to the newest release's tag.
  tag_url=$(curl -fsSLI -o /dev/null -w '%{url_effective}' "$releases/latest") ||
    fail "cannot find the latest release at $releases/latest"
  version=${tag_url##*/}
fi
version=${version#v}
case "$version" in
  [0-9]*.[0-9]*.[0-9]*) ;;
  *) fail "\"$version\" is not a release version; give one like 0.3.0, or latest" ;;
esac
case "$(uname -s)" in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) fail "oz0 is built for Linux and macOS, not $(uname -s)" ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) arch=amd64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) fail "oz0 is built for amd64 and arm64, not $(uname -m)" ;;
esac
archive="oz0_${version}_${os}_${arch}.tar.gz"
url="$releases/download/v$version"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
curl -fsSL -o "$tmp/$archive" "$url/$archive" || fail "cannot download $url/$archive"
curl -fsSL -o "$tmp/checksums.txt" "$url/checksums.txt" || fail "cannot download $url/checksums.txt"
want=$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1 }' "$tmp/checksums.txt")
[ -n "$want" ] || fail "checksums.txt of v$version has no line for $archive"
if command -v sha256sum >/dev/null; then
  got=$(sha256sum "$tmp/$archive" | awk '{ print $1 }')
else
  got=$(shasum -a 256 "$tmp/$archive" | awk '{ print $1 }')
fi
[ "$got" = "$want" ] || fail "$archive does not match checksums.txt of v$version (sha256 $got, want $want); not installed"

mkdir -p "$tmp/x" "$dir"
tar -xzf "$tmp/$archive" -C "$tmp/x" oz0
install -m 0755 "$tmp/x/oz0" "$dir/oz0"
echo "installed oz0 $version ($os/$arch) in $dir/oz0, verified against checksums.txt"
if [ -n "${GITHUB_PATH:-}" ]; then
  echo "$dir" >>"$GITHUB_PATH"
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  echo "version=$version" >>"$GITHUB_OUTPUT"
fi
