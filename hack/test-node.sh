#!/usr/bin/env bash
# `make test-node`: ltiop as pods on a real one-node cluster. Builds the image (make image),
# starts hack/nodecluster.sh, imports the image into the node, runs test/node (the chart
# installed, a launch through the Service, uninstall) and stops the cluster, whatever happened.
# Needs root (a kubelet and containerd); CI runs it after `make test`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ "$(id -u)" -eq 0 ] || { echo "test-node: needs root (it starts a kubelet and containerd)" >&2; exit 1; }
start=$SECONDS
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
image="ghcr.io/ltiop/ltiop:$version"
make -s image IMAGE="$image" >/dev/null
echo "test-node: image $image built ($((SECONDS - start)) s)"
export LTIOP_NODE_DIR=${LTIOP_NODE_DIR:-$root/tmp/nodecluster}
hack/nodecluster.sh down >/dev/null 2>&1 || true
# What the machine looks like before: `down` must leave it so (links, routes, firewall, sysctls).
machine() {
  ip -br link | awk '{print $1}' | sort
  ip route
  iptables-save | grep -v '^[#:]' | grep -v '^COMMIT$' | grep -v '^\*' | sort
  sysctl net.ipv4.ip_forward net.ipv4.conf.all.route_localnet net.bridge.bridge-nf-call-iptables \
    vm.overcommit_memory kernel.panic kernel.panic_on_oops 2>/dev/null
  ls -d /var/lib/kubelet /var/log/pods /var/log/containers /run/containerd /run/netns /var/lib/cni 2>/dev/null || true
}
before=$(machine)
logs() {
  status=$?
  if [ $status -ne 0 ] && [ -d "$LTIOP_NODE_DIR/logs" ]; then
    for f in "$LTIOP_NODE_DIR"/logs/*.log; do echo "--- tail of $f"; tail -n 30 "$f"; done
    find "$LTIOP_NODE_DIR/pod-logs" -name '*.log' 2>/dev/null | while read -r f; do echo "--- tail of $f"; tail -n 30 "$f"; done
  fi
  hack/nodecluster.sh down
  if [ "$(machine)" != "$before" ]; then
    echo "test-node: hack/nodecluster.sh down left the machine changed:" >&2
    diff <(echo "$before") <(machine) >&2 || true
    status=1
  fi
  exit $status
}
trap logs EXIT
up=$SECONDS
kubeconfig=$(hack/nodecluster.sh up)
echo "test-node: cluster up ($((SECONDS - up)) s)"
hack/nodecluster.sh load bin/image/ltiop.tar
export LTIOP_NODE_KUBECONFIG=$kubeconfig LTIOP_NODE_IMAGE=$image LTIOP_REQUIRE_NODE=1
LTIOP_NODE_KUBECTL=$(hack/build-binaries.sh node)/kubectl
export LTIOP_NODE_KUBECTL
go test -count=1 -timeout 30m -v ./test/node/ -ginkgo.v
echo "test-node: passed in $((SECONDS - start)) s"
