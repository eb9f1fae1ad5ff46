#!/usr/bin/env bash
# Copies into charts/ltiop what config/ holds the one source of: the generated CRDs, the
# Roles' rules and the Grafana dashboard (files/, read by the chart's templates). `make
# manifests` runs it; hack/verify-generated.sh runs it with --check.
#
# The CRDs become templates (templates/crds/), so that `helm upgrade` upgrades them (Helm
# installs a chart's crds/ once and never touches them again), as cert-manager's chart does.
# Each is the generated file, byte for byte, inside a wrapper of template lines only:
#   {{- if .Values.crds.install }}      first line: crds.install=false renders nothing
#   helm.sh/resource-policy: keep       under metadata.annotations, if crds.keep: `helm
#                                       uninstall` leaves the CRDs, and so the registrations
#   {{- end }}                          last line
# so the render with crds.keep=false is the generated file (test/deploy checks it).
#
#   hack/sync-chart.sh           write the copies
#   hack/sync-chart.sh --check   print each stale copy and fail, writing nothing
#   hack/sync-chart.sh --list    print the plain copies' pairs (source, copy)
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
crd_dir=charts/ltiop/templates/crds

pairs() {
  echo "config/rbac/role.yaml charts/ltiop/files/manager-role.yaml"
  echo "config/rbac/leader_election_role.yaml charts/ltiop/files/leader-election-role.yaml"
  echo "config/metrics-auth/metrics_auth_role.yaml charts/ltiop/files/metrics-auth-role.yaml"
  echo "config/metrics-auth/metrics_reader_role.yaml charts/ltiop/files/metrics-reader-role.yaml"
  echo "config/grafana/ltiop-dashboard.json charts/ltiop/files/ltiop-dashboard.json"
  for r in platformregistration_editor platformregistration_viewer toolregistration_editor toolregistration_viewer; do
    echo "config/rbac/${r}_role.yaml charts/ltiop/files/user-roles/${r}_role.yaml"
  done
}

# crd_template SOURCE: the chart's template of a generated CRD, on standard output.
crd_template() {
  local src=$1
  if grep -q '{{' "$src"; then
    echo "$src holds {{, which Helm would read as a template" >&2
    return 1
  fi
  echo '{{- if .Values.crds.install }}'
  # After the first "  annotations:" (metadata's: controller-gen always writes its version
  # there). The {{- trims the line break before it, so keep=false leaves no blank line.
  awk -v src="$src" '
    { print }
    !done && /^  annotations:$/ {
      print "    {{- if .Values.crds.keep }}"
      print "    helm.sh/resource-policy: keep"
      print "    {{- end }}"
      done = 1
    }
    END { if (!done) { print src ": no metadata.annotations to add the keep policy to" > "/dev/stderr"; exit 1 } }
  ' "$src"
  echo '{{- end }}'
}

case "${1:-}" in
--list)
  pairs
  ;;
--check)
  stale=0
  tmp=$(mktemp)
  trap 'rm -f "$tmp"' EXIT
  for src in config/crd/bases/*.yaml; do
    dst=$crd_dir/$(basename "$src")
    crd_template "$src" >"$tmp"
    if ! cmp -s "$tmp" "$dst"; then echo "stale: $dst" >&2; stale=1; fi
  done
  for dst in "$crd_dir"/*.yaml; do
    [ -f "config/crd/bases/$(basename "$dst")" ] || { echo "no longer generated: $dst" >&2; stale=1; }
  done
  # Helm would install these once, beside the templates.
  if [ -e charts/ltiop/crds ]; then echo "stale: charts/ltiop/crds (the CRDs are in $crd_dir)" >&2; stale=1; fi
  while read -r src dst; do
    if ! cmp -s "$src" "$dst"; then echo "stale: $dst" >&2; stale=1; fi
  done < <(pairs)
  exit "$stale"
  ;;
"")
  mkdir -p "$crd_dir"
  rm -f "$crd_dir"/*.yaml
  for src in config/crd/bases/*.yaml; do crd_template "$src" >"$crd_dir/$(basename "$src")"; done
  rm -rf charts/ltiop/crds
  pairs | while read -r src dst; do cp "$src" "$dst"; done
  ;;
*)
  echo "usage: hack/sync-chart.sh [--check | --list]" >&2
  exit 2
  ;;
esac
