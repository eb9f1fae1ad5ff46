#!/usr/bin/env bash
# Builds kube-apiserver, etcd (and, on request, kubectl or a whole node) from the Go module
# proxy into bin/k8s/<version>/, the layout envtest's KUBEBUILDER_ASSETS expects. Cached: a
# binary that exists is not rebuilt.
# Usage: hack/build-binaries.sh [kubectl | node]
#   node: also kubectl, kubelet, kube-proxy, kube-controller-manager and kube-scheduler, the
#   rest of the one-node cluster of hack/nodecluster.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kube_version=$(awk '/^require k8s.io\/kubernetes /{print $3}' "$root/hack/tools/kube/go.mod")
etcd_version=$(awk '/^require go.etcd.io\/etcd\/server\/v3 /{print $3}' "$root/hack/tools/etcd/go.mod")
out="$root/bin/k8s/${kube_version#v}-etcd-${etcd_version#v}"
mkdir -p "$out"

# A module build reports v0.0.0-master, which a chart's kubeVersion constraint refuses: stamp
# the release as Kubernetes' own build does (hack/lib/version.sh there).
major=${kube_version#v}; major=${major%%.*}
minor=${kube_version#v}; minor=${minor#*.}; minor=${minor%%.*}
stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamp+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  stamp+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

build() { # name, module dir, package
  local name=$1 dir=$2 pkg=$3
  if [ -x "$out/$name" ]; then return; fi
  echo "building $name from the Go module proxy (a cold build takes several minutes)..." >&2
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w$stamp" -o "$out/$name.tmp" "$pkg")
  mv "$out/$name.tmp" "$out/$name"
}

build kube-apiserver "$root/hack/tools/kube" k8s.io/kubernetes/cmd/kube-apiserver
build etcd "$root/hack/tools/etcd" .
case "${1:-}" in
  kubectl)
    build kubectl "$root/hack/tools/kube" k8s.io/kubernetes/cmd/kubectl ;;
  node)
    for cmd in kubectl kubelet kube-proxy kube-controller-manager kube-scheduler; do
      build "$cmd" "$root/hack/tools/kube" "k8s.io/kubernetes/cmd/$cmd"
    done ;;
esac
echo "$out"
