#!/usr/bin/env bash
# actionlint over every GitHub Actions workflow: the repository's own (.github/workflows), which
# also has actionlint check action.yml where plugin-action.yml uses it (actionlint reads an
# action's metadata where a workflow uses it, and lints no action.yml on its own), and the CI
# workflow of every template, rendered by `oz0 plugin new` (the templates are Go templates), and
# the workflows docs/ci.md shows (each ```yaml block that starts with name:).
#
#   ACTIONLINT="go run github.com/rhysd/actionlint/cmd/actionlint@vX.Y.Z" scripts/lint-workflows.sh [path/to/oz0]
#
# make lint-workflows passes the pinned actionlint; make test runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
OZ0=$(realpath "${1:-bin/oz0}")
actionlint=${ACTIONLINT:?set ACTIONLINT to the actionlint command (make lint-workflows does)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "actionlint: .github/workflows and action.yml"
$actionlint
files=()
for t in $("$OZ0" plugin templates --jq '.[].name'); do
  "$OZ0" plugin new "wf-$t" --template "$t" --description "Sorts support tickets" --dir "$work" >/dev/null
  for f in "$work/wf-$t"/.github/workflows/*.yml; do files+=("$f"); done
  # The jobs it has commented out (the eval cases over a matrix), as they are once uncommented.
  sed -E '/^  # eval:$/,$ s/^  # /  /' "$work/wf-$t/.github/workflows/ci.yml" >"$work/wf-$t-uncommented.yml"
  if cmp -s "$work/wf-$t/.github/workflows/ci.yml" "$work/wf-$t-uncommented.yml"; then
    echo "the workflow of template $t has no commented-out eval jobs (docs/ci.md, Many machines)" >&2
    exit 1
  fi
  files+=("$work/wf-$t-uncommented.yml")
done
echo "actionlint: the templates' workflows (${#files[@]})"
$actionlint "${files[@]}"

mkdir "$work/docs"
awk -v dir="$work/docs" '
  /^```yaml$/ { block = 1; n++; first = 1; next }
  /^```$/ { block = 0; next }
  block && first { keep = ($0 ~ /^name:/); first = 0 }
  block && keep { print > (dir "/ci-md-" n ".yml") }
' docs/ci.md
docs=("$work"/docs/*.yml)
echo "actionlint: the workflows of docs/ci.md (${#docs[@]})"
$actionlint "${docs[@]}"
