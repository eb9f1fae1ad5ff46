#!/usr/bin/env bash
# Builds kube-apiserver, etcd (and, on request, kubectl) from the Go module proxy into
# bin/k8s/<version>/, the layout envtest's KUBEBUILDER_ASSETS expects. Cached: a binary
# that exists is not rebuilt. Usage: hack/build-binaries.sh [kubectl]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kube_version=$(awk '/^require k8s.io\/kubernetes /{print $3}' "$root/hack/tools/kube/go.mod")
etcd_version=$(awk '/^require go.etcd.io\/etcd\/server\/v3 /{print $3}' "$root/hack/tools/etcd/go.mod")
out="$root/bin/k8s/${kube_version#v}-etcd-${etcd_version#v}"
mkdir -p "$out"

build() { # name, module dir, package
  local name=$1 dir=$2 pkg=$3
  if [ -x "$out/$name" ]; then return; fi
  echo "building $name from the Go module proxy (a cold build takes several minutes)..." >&2
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out/$name.tmp" "$pkg")
  mv "$out/$name.tmp" "$out/$name"
}

build kube-apiserver "$root/hack/tools/kube" k8s.io/kubernetes/cmd/kube-apiserver
build etcd "$root/hack/tools/etcd" .
if [ "${1:-}" = kubectl ]; then
  build kubectl "$root/hack/tools/kube" k8s.io/kubernetes/cmd/kubectl
fi
echo "$out"
