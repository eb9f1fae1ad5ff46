#!/usr/bin/env bash
# Measures one ltiop replica holding N registrations (issue #14), on a local control plane:
# builds the control-plane binaries (cached) and ltiop, then runs hack/scale. Usage:
#   hack/scale.sh -n 10000 -parallel 16
# Flags: -n, -parallel, -samples, -listen, -out (default tmp/scale), -ready-timeout.
# The report is printed and written to tmp/scale/report-<n>.txt; ltiop's log to tmp/scale/ltiop.log.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
assets=${KUBEBUILDER_ASSETS:-$(hack/build-binaries.sh)}
export KUBEBUILDER_ASSETS="$assets"
mkdir -p tmp/scale
go build -o tmp/scale/ltiop .
go build -o tmp/scale/scale ./hack/scale
exec tmp/scale/scale -ltiop tmp/scale/ltiop "$@"
