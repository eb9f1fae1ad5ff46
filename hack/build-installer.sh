#!/usr/bin/env bash
# Renders the whole installation (CRDs, RBAC, Namespace, Deployment, Service, PDB) from
# config/default with the manager image set to $1, on standard output. `make build-installer`
# writes it to dist/install.yaml; tests apply the same render to an API server.
# The checked-in kustomizations are not edited: a throwaway overlay sets the image.
# Usage: hack/build-installer.sh registry.example.com/ltiop:v0.1.0
set -euo pipefail
img=${1:?usage: hack/build-installer.sh IMAGE}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
case $img in
*@*) name=${img%%@*} digest=${img#*@} tag="" ;;
*) name=$img digest="" tag="" ;;
esac
# A tag is what follows the last colon, unless that colon belongs to a registry port.
if [ -z "$digest" ] && [[ ${name##*/} == *:* ]]; then
  tag=${name##*:} name=${name%:*}
fi
mkdir -p tmp
overlay=$(mktemp -d "$root/tmp/installer.XXXXXX")
trap 'rm -rf "$overlay"' EXIT
{
  echo "apiVersion: kustomize.config.k8s.io/v1beta1"
  echo "kind: Kustomization"
  echo "resources:"
  echo "- ../../config/default"
  echo "images:"
  echo "- name: ghcr.io/ltiop/ltiop"
  echo "  newName: \"$name\""
  if [ -n "$tag" ]; then echo "  newTag: \"$tag\""; fi
  if [ -n "$digest" ]; then echo "  digest: \"$digest\""; fi
} >"$overlay/kustomization.yaml"
go tool kustomize build "$overlay"
