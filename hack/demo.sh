#!/usr/bin/env bash
# `make demo`: builds the control-plane binaries (cached), finds or builds a kubectl that
# matches their version, and runs hack/demo until interrupted (LTIOP_DEMO_REPLICAS=N for N replicas).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# Several replicas share a redis-server the demo starts: say so before a cold build, not after.
if [[ ${LTIOP_DEMO_REPLICAS:-1} =~ ^[2-9]$ ]] && [ -z "${LTIOP_REPLAY_STORE:-}" ] && ! command -v redis-server >/dev/null 2>&1; then
  echo "demo: LTIOP_DEMO_REPLICAS=$LTIOP_DEMO_REPLICAS needs redis-server on the PATH, for the replay store the replicas share." >&2
  echo "Install it (Debian/Ubuntu: sudo apt-get install redis-server), or set LTIOP_REPLAY_STORE to a Redis of your own." >&2
  exit 1
fi
# ltiop refuses an API key shorter than 32 characters (httpapi.MinAPIKeyLength) and would
# never become ready: say so now, not after a build and a two-minute wait.
if [ -n "${LTIOP_API_KEY:-}" ] && [ ${#LTIOP_API_KEY} -lt 32 ]; then
  echo "demo: LTIOP_API_KEY has ${#LTIOP_API_KEY} characters; ltiop needs at least 32." >&2
  echo "Unset it for a random key, or set a longer one: export LTIOP_API_KEY=\$(openssl rand -hex 32)" >&2
  exit 1
fi
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
# Built, then run in place of this shell, rather than `go run`: go run exits 1 when it has
# seen the Ctrl-C, even when the demo it ran cleaned up and exited 0, and make then reports
# "Error 1". This way `make demo` ends with the demo's own status.
go build -o bin/ltiop-demo ./hack/demo
exec bin/ltiop-demo
