#!/usr/bin/env bash
# Writes the package-lock.json of a Node template (scaffold/templates/<template>/) from its
# package.json: the template is rendered with a placeholder name, npm resolves the pinned
# dependencies (nothing is installed), and the placeholder becomes {{.Name}} again, so that each
# plugin's lock file carries its own name. Run it after changing a Node template's package.json;
# scaffold's tests fail while the two disagree.
#   scripts/template-lock.sh strands-ts
set -euo pipefail
template=${1:?usage: scripts/template-lock.sh TEMPLATE}
cd "$(dirname "$0")/.."
dir=scaffold/templates/$template
[ -f "$dir/package.json" ] || { echo "template-lock: $dir/package.json does not exist" >&2; exit 2; }
placeholder=oz0-template-lock-placeholder
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go run ./cmd/oz0 plugin new "$placeholder" --template "$template" --description "placeholder" --dir "$tmp" >/dev/null
# No resolved URLs: npm installs from the registry it is configured with, a mirror included.
(cd "$tmp/$placeholder" && npm install --package-lock-only --ignore-scripts --no-audit --no-fund \
  --omit-lockfile-registry-resolved >/dev/null)
sed "s/\"$placeholder\"/\"{{.Name}}\"/" "$tmp/$placeholder/package-lock.json" > "$dir/package-lock.json"
echo "wrote $dir/package-lock.json"
