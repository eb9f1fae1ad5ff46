#!/usr/bin/env bash
# `make demo`: builds the control-plane binaries (cached), finds or builds a kubectl that
# matches their version, and runs hack/demo until interrupted.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
assets=$(hack/build-binaries.sh)
server_minor=$(basename "$assets" | cut -d. -f2)

# kubectl supports one minor version of skew with the API server.
kubectl_ok() {
  command -v kubectl >/dev/null 2>&1 || return 1
  local minor
  minor=$(kubectl version --client -o json 2>/dev/null | sed -n 's/.*"minor": *"\([0-9]*\).*/\1/p' | head -1)
  [ -n "$minor" ] && [ $((minor - server_minor)) -le 1 ] && [ $((server_minor - minor)) -le 1 ]
}
if ! kubectl_ok; then
  assets=$(hack/build-binaries.sh kubectl)
  export LTIOP_DEMO_KUBECTL_DIR="$assets"
  echo "demo: using kubectl built from source: $assets/kubectl (added to PATH by tmp/demo.env)" >&2
fi
export KUBEBUILDER_ASSETS="$assets"
exec go run ./hack/demo
