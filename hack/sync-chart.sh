#!/usr/bin/env bash
# Copies into charts/ltiop what config/ holds the one source of: the generated CRDs (crds/),
# the Roles' rules and the Grafana dashboard (files/, read by the chart's templates). `make manifests` runs it;
# hack/verify-generated.sh compares the copies (--list prints the pairs).
set -euo pipefail
cd "$(dirname "$0")/.."
pairs() {
  for f in config/crd/bases/*.yaml; do echo "$f charts/ltiop/crds/$(basename "$f")"; done
  echo "config/rbac/role.yaml charts/ltiop/files/manager-role.yaml"
  echo "config/rbac/leader_election_role.yaml charts/ltiop/files/leader-election-role.yaml"
  echo "config/metrics-auth/metrics_auth_role.yaml charts/ltiop/files/metrics-auth-role.yaml"
  echo "config/metrics-auth/metrics_reader_role.yaml charts/ltiop/files/metrics-reader-role.yaml"
  echo "config/grafana/ltiop-dashboard.json charts/ltiop/files/ltiop-dashboard.json"
  for r in platformregistration_editor platformregistration_viewer toolregistration_editor toolregistration_viewer; do
    echo "config/rbac/${r}_role.yaml charts/ltiop/files/user-roles/${r}_role.yaml"
  done
}
if [ "${1:-}" = --list ]; then pairs; exit 0; fi
pairs | while read -r src dst; do cp "$src" "$dst"; done
