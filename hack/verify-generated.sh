#!/usr/bin/env bash
# Regenerates the CRD, RBAC and deepcopy code into a temporary directory and compares them
# with the files in the tree, so stale generated files fail `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go tool controller-gen object:headerFile=hack/boilerplate.go.txt paths=./api/... output:object:dir="$tmp/object"
go tool controller-gen crd rbac:roleName=ltiop-manager paths=./... output:crd:dir="$tmp/crd" output:rbac:dir="$tmp/rbac"
stale=0
check() { # generated, committed
  if ! diff -u "$2" "$1" >/dev/null 2>&1; then echo "stale: $2" >&2; stale=1; fi
}
check "$tmp/object/zz_generated.deepcopy.go" api/v1alpha1/zz_generated.deepcopy.go
for f in "$tmp"/crd/*.yaml; do check "$f" "config/crd/bases/$(basename "$f")"; done
check "$tmp/rbac/role.yaml" config/rbac/role.yaml
for f in config/crd/bases/*.yaml; do [ -f "$tmp/crd/$(basename "$f")" ] || { echo "no longer generated: $f" >&2; stale=1; }; done
# The chart's copies (hack/sync-chart.sh) of the CRDs (as templates), Roles and dashboard.
hack/sync-chart.sh --check || stale=1
if [ "$stale" = 1 ]; then
  echo "generated files are out of date: run 'make manifests generate' and commit the result" >&2
  exit 1
fi
echo "generated files are current"
