#!/usr/bin/env bash
# A real one-node Kubernetes cluster on this machine, built from the same sources as envtest:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kube-proxy from
# k8s.io/kubernetes (hack/build-binaries.sh node), containerd, runc and the CNI plugins from
# Debian, CoreDNS from its Go module, the pause image compiled from Kubernetes' source and a
# Redis image of Debian's redis-server. No image is pulled: every image the cluster runs is
# built here and imported into containerd (images() below, and any tarball given to `load`).
#
#   hack/nodecluster.sh up           start it (as root); prints the kubeconfig's path
#   hack/nodecluster.sh load TAR...  import image tarballs (hack/ociimage -tar) into the node
#   hack/nodecluster.sh check        check that no packet can leave the machine (exit 1 if not)
#   hack/nodecluster.sh down         stop it and remove everything it made, putting back the
#                                    firewall rules and sysctls it found
#
# Network: everything lives on the bridge ltiop0 (10.244.0.1/24, pods in 10.244.0.0/24) and in
# the pods' network namespaces. The API server and the kubelet bind to the bridge address.
# Before anything starts, the Service range is routed to the bridge (an address kube-proxy
# has not yet programmed would otherwise follow the default route out), forwarding between
# the bridge and any other interface is dropped, and CoreDNS has no upstream. The drop is in
# the mangle table's FORWARD chain, which runs before the filter table's, where kube-proxy
# prepends its own ACCEPT rules (for marked service traffic).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
state=${LTIOP_NODE_DIR:-$root/tmp/nodecluster}
bridge=ltiop0
node_ip=10.244.0.1
pod_cidr=10.244.0.0/24
service_cidr=10.96.0.0/24
dns_ip=10.96.0.10
node_name=ltiop-node
guard=LTIOP-NODE-GUARD
# Every sysctl the CNI bridge, kube-proxy or the kubelet may change, put back by `down`.
sysctls=(net.ipv4.ip_forward net.ipv4.conf.all.route_localnet net.bridge.bridge-nf-call-iptables
  net.bridge.bridge-nf-call-ip6tables vm.overcommit_memory vm.panic_on_oom kernel.panic
  kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
# Paths outside the state directory that the kubelet, containerd or the CNI plugins create
# whatever their configuration; `down` removes those that did not exist before `up`, and what
# `up` added inside those that did.
host_paths=(/var/lib/kubelet /var/log/pods /var/log/containers /run/containerd /run/netns /var/lib/cni)
pause_image=registry.k8s.io/pause:3.10
coredns_image=registry.k8s.io/coredns/coredns:v1.15.0
# The chart's own Redis (replayStore.redis), from Debian's redis-server and its libraries.
redis_image=docker.io/library/redis:debian-ltiop-node

log() { echo "nodecluster: $*" >&2; }
die() { log "$*"; exit 1; }
ctr_() { ctr --address "$state/containerd.sock" --namespace k8s.io "$@"; }
kubectl_() { "$bin/kubectl" --kubeconfig "$state/kubeconfig" "$@"; }

# wait_for DESCRIPTION SECONDS COMMAND...: polls COMMAND every 0.2 s until it succeeds.
wait_for() {
  local what=$1 limit=$2; shift 2
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then log "timed out after ${limit}s waiting for $what"; return 1; fi
    sleep 0.2
  done
}

start() { # name, command...: runs a daemon in the background, logging to $state/logs/name.log
  local name=$1; shift
  setsid "$@" >"$state/logs/$name.log" 2>&1 < /dev/null &
  echo $! >"$state/pids/$name"
}

# check: the guards that keep every packet on this machine are in place.
check() {
  local route
  route=$(ip route get 10.96.0.99 2>/dev/null || true)
  [[ $route == *" dev $bridge "* ]] || { log "the Service range is not routed to $bridge: $route"; return 1; }
  local first
  first=$(iptables -t mangle -S FORWARD 2>/dev/null | sed -n 2p)
  [ "$first" = "-A FORWARD -j $guard" ] || { log "mangle FORWARD does not jump to $guard first: $first"; return 1; }
  iptables -t mangle -C "$guard" -i "$bridge" ! -o "$bridge" -j DROP 2>/dev/null || { log "$guard does not drop $bridge → elsewhere"; return 1; }
  iptables -t mangle -C "$guard" ! -i "$bridge" -o "$bridge" -j DROP 2>/dev/null || { log "$guard does not drop elsewhere → $bridge"; return 1; }
  if [ -f "$state/coredns.yaml" ] && grep -qw forward "$state/coredns.yaml"; then log "CoreDNS has an upstream"; return 1; fi
  return 0
}

pki() {
  local d=$state/pki
  mkdir -p "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$d/ca.key" -out "$d/ca.crt" -days 2 -subj "/CN=ltiop-node-ca" 2>/dev/null
  cert() { # name, subject, extensions
    openssl req -newkey rsa:2048 -nodes -keyout "$d/$1.key" -out "$d/$1.csr" -subj "$2" 2>/dev/null
    openssl x509 -req -in "$d/$1.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
      -out "$d/$1.crt" -extfile <(printf '%s\n' "$3") 2>/dev/null
  }
  cert apiserver "/CN=kube-apiserver" "subjectAltName=IP:$node_ip,IP:10.96.0.1,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost
extendedKeyUsage=serverAuth"
  # One identity in system:masters for the components and the tests: this cluster lives
  # minutes and is reachable only from this machine.
  cert admin "/O=system:masters/CN=ltiop-node-admin" "extendedKeyUsage=clientAuth"
  openssl genrsa -out "$d/sa.key" 2048 2>/dev/null
  openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
  cat >"$state/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: ltiop-node
  cluster: {server: "https://$node_ip:6443", certificate-authority: "$d/ca.crt"}
users:
- name: admin
  user: {client-certificate: "$d/admin.crt", client-key: "$d/admin.key"}
contexts:
- name: ltiop-node
  context: {cluster: ltiop-node, user: admin}
current-context: ltiop-node
EOF
}

# images: the pause, CoreDNS and Redis images, built here (cached in bin/node-images).
images() {
  local out=$root/bin/node-images arch
  arch=$(go env GOARCH)
  mkdir -p "$out"
  if [ ! -f "$out/pause.tar" ]; then
    local src
    src=$(cd "$root/hack/tools/kube" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c
    gcc -Os -Wall -Werror -static -DVERSION=v3.10-ltiop -o "$out/pause" "$src"
    (cd "$root" && go run ./hack/ociimage -created 0 -base none -ref "$pause_image" -user 65535:65535 \
      -entrypoint /pause -out "$out/pause" -tar "$out/pause.tar" "linux/$arch=$out/pause") >/dev/null
  fi
  if [ ! -f "$out/coredns.tar" ]; then
    (cd "$root/hack/tools/coredns" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out/coredns" .)
    (cd "$root" && go run ./hack/ociimage -created 0 -base static -ref "$coredns_image" \
      -entrypoint /coredns -out "$out/coredns" -tar "$out/coredns.tar" "linux/$arch=$out/coredns") >/dev/null
  fi
  if [ ! -f "$out/redis.tar" ]; then
    local redis libs=()
    redis=$(command -v redis-server) || die "redis-server is missing (Debian: apt-get install redis-server)"
    for lib in $(ldd "$redis" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
      libs+=(-file "$lib:$lib")
    done
    (cd "$root" && go run ./hack/ociimage -created 0 -base static -ref "$redis_image" -user 999:999 \
      -entrypoint /usr/bin/redis-server "${libs[@]}" -out "$out/redis" -tar "$out/redis.tar" "linux/$arch=$redis") >/dev/null
  fi
  echo "$out"
}

up() {
  [ "$(id -u)" -eq 0 ] || die "must run as root (it starts a kubelet and a container runtime)"
  [ ! -d "$state/pids" ] || die "$state exists: a cluster is running or was not stopped (hack/nodecluster.sh down)"
  for tool in containerd runc ctr iptables iptables-save ip openssl gcc redis-server; do
    command -v "$tool" >/dev/null || die "$tool is missing (Debian: apt-get install containerd runc containernetworking-plugins iptables openssl gcc redis-server)"
  done
  [ -x /usr/lib/cni/bridge ] || die "CNI plugins are missing (Debian: apt-get install containernetworking-plugins)"
  bin=$("$root/hack/build-binaries.sh" node)
  local img
  img=$(images)
  mkdir -p "$state"/{pids,logs,etcd,kubelet,pod-logs,cni/net.d,cni/ipam,containerd/root,containerd/state}

  # What `down` puts back.
  for s in "${sysctls[@]}"; do
    v=$(sysctl -n "$s" 2>/dev/null) && echo "$s=$v"
  done >"$state/sysctls.saved"
  iptables-save >"$state/iptables.saved"
  ip6tables-save >"$state/ip6tables.saved" 2>/dev/null || true
  ls /var/run/netns 2>/dev/null >"$state/netns.saved" || true
  for p in "${host_paths[@]}"; do [ -e "$p" ] && echo "$p"; done >"$state/paths.saved"
  touch "$state/started"

  # The network first, so that nothing ever sees a route out.
  ip link add "$bridge" type bridge
  ip addr add "$node_ip/24" dev "$bridge"
  ip link set "$bridge" up
  ip route add "$service_cidr" dev "$bridge"
  iptables -t mangle -N "$guard"
  iptables -t mangle -A "$guard" -i "$bridge" ! -o "$bridge" -j DROP
  iptables -t mangle -A "$guard" ! -i "$bridge" -o "$bridge" -j DROP
  iptables -t mangle -I FORWARD 1 -j "$guard"
  cp "$root/hack/nodecluster/coredns.yaml" "$state/coredns.yaml"
  check || die "the network guards are not in place: not starting"

  pki
  cat >"$state/cni/net.d/10-ltiop-node.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "ltiop-node", "plugins": [
  {"type": "bridge", "bridge": "$bridge", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$state/cni/ipam",
            "ranges": [[{"subnet": "$pod_cidr", "gateway": "$node_ip"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}
]}
EOF
  cat >"$state/containerd.toml" <<EOF
version = 2
root = "$state/containerd/root"
state = "$state/containerd/state"
[grpc]
  address = "$state/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$pause_image"
  # root here lacks CAP_SYS_RESOURCE: runc may not lower a container's oom_score_adj.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$state/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        Root = "$state/runc"
        SystemdCgroup = false
EOF
  start containerd containerd --config "$state/containerd.toml"
  wait_for containerd 30 ctr_ version
  for tar in "$img/pause.tar" "$img/coredns.tar" "$img/redis.tar"; do ctr_ images import "$tar" >/dev/null; done

  start etcd "$bin/etcd" --data-dir "$state/etcd" --listen-client-urls http://127.0.0.1:23790 \
    --advertise-client-urls http://127.0.0.1:23790 --listen-peer-urls http://127.0.0.1:23800 \
    --unsafe-no-fsync
  local pki=$state/pki
  start kube-apiserver "$bin/kube-apiserver" --etcd-servers http://127.0.0.1:23790 \
    --bind-address "$node_ip" --advertise-address "$node_ip" --secure-port 6443 \
    --service-cluster-ip-range "$service_cidr" --client-ca-file "$pki/ca.crt" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --kubelet-client-certificate "$pki/admin.crt" --kubelet-client-key "$pki/admin.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --authorization-mode Node,RBAC --allow-privileged=true \
    --kubelet-preferred-address-types InternalIP
  wait_for kube-apiserver 90 kubectl_ get --raw /readyz
  start kube-controller-manager "$bin/kube-controller-manager" --kubeconfig "$state/kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false --use-service-account-credentials \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
    --service-cluster-ip-range "$service_cidr"
  start kube-scheduler "$bin/kube-scheduler" --kubeconfig "$state/kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false

  echo "nameserver 127.0.0.1" >"$state/resolv.conf"
  cat >"$state/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine has cgroup v1.
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://$state/containerd.sock
address: $node_ip
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$pki/ca.crt"}
authorization: {mode: Webhook}
clusterDNS: [$dns_ip]
clusterDomain: cluster.local
resolvConf: $state/resolv.conf
podLogsDir: $state/pod-logs
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
imageGCHighThresholdPercent: 100
serializeImagePulls: false
EOF
  start kubelet "$bin/kubelet" --config "$state/kubelet.yaml" --kubeconfig "$state/kubeconfig" \
    --root-dir "$state/kubelet" --cert-dir "$state/kubelet/pki" \
    --hostname-override "$node_name" --node-ip "$node_ip"
  cat >"$state/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: "$state/kubeconfig"}
hostnameOverride: $node_name
bindAddress: $node_ip
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
clusterCIDR: $pod_cidr
nodePortAddresses: ["$node_ip/32"]
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
  start kube-proxy "$bin/kube-proxy" --config "$state/kube-proxy.yaml"
  wait_for "node $node_name Ready" 120 bash -c "'$bin/kubectl' --kubeconfig '$state/kubeconfig' get node $node_name -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
  kubectl_ apply -f "$state/coredns.yaml" >/dev/null
  wait_for "CoreDNS" 120 kubectl_ -n kube-system rollout status deploy/coredns --timeout 1s
  log "up: kubeconfig $state/kubeconfig (kubectl: $bin/kubectl)"
  echo "$state/kubeconfig"
}

load() {
  for tar in "$@"; do ctr_ images import "$tar" >/dev/null; done
}

down() {
  [ -d "$state" ] || { log "nothing to stop ($state does not exist)"; return 0; }
  for name in kubelet kube-proxy kube-scheduler kube-controller-manager kube-apiserver etcd; do
    [ -f "$state/pids/$name" ] && kill "$(cat "$state/pids/$name")" 2>/dev/null || true
  done
  # Containers outlive the kubelet: kill their tasks through containerd, then containerd.
  if [ -S "$state/containerd.sock" ]; then
    for task in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$task" 2>/dev/null || true; done
    for _ in $(seq 50); do [ -z "$(ctr_ tasks ls -q 2>/dev/null | head -1)" ] && break; sleep 0.2; done
  fi
  [ -f "$state/pids/containerd" ] && kill "$(cat "$state/pids/containerd")" 2>/dev/null || true
  for _ in $(seq 50); do
    alive=""
    for f in "$state"/pids/*; do [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && alive=1; done
    [ -z "$alive" ] && break; sleep 0.2
  done
  for f in "$state"/pids/*; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true; done
  pkill -9 -f "containerd-shim.*$state/containerd.sock" 2>/dev/null || true
  # Mounts under the state directory (pod volumes, snapshots, sandbox files), deepest first.
  awk -v p="$state/" 'index($2, p) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do umount -l "$m" || true; done
  # The pods' network namespaces (and with them their veths).
  for ns in $(ls /var/run/netns 2>/dev/null); do
    grep -qx "$ns" "$state/netns.saved" 2>/dev/null || ip netns delete "$ns" 2>/dev/null || true
  done
  for p in "${host_paths[@]}"; do
    [ -e "$p" ] || continue
    if grep -qx "$p" "$state/paths.saved" 2>/dev/null; then
      find "$p" -mindepth 1 -newer "$state/started" -delete 2>/dev/null || true
    else
      rm -rf "$p"
    fi
  done
  # The kubelet's cgroups, deepest first.
  for c in /sys/fs/cgroup/*/kubepods; do
    [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  # A pod's network namespace can outlive its deletion for a while (the kernel still holds
  # it), and with it the host end of its veth: delete those still on the bridge.
  for v in $(ip -o link show master "$bridge" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
    ip link del "$v" 2>/dev/null || true
  done
  ip link del "$bridge" 2>/dev/null || true
  ip route del "$service_cidr" 2>/dev/null || true
  if [ -f "$state/iptables.saved" ]; then
    # kube-proxy's and the kubelet's chains go; the tables are put back as they were.
    for t in filter nat mangle raw; do iptables -t "$t" -F; iptables -t "$t" -X; done 2>/dev/null || true
    iptables-restore <"$state/iptables.saved"
    [ -s "$state/ip6tables.saved" ] && ip6tables-restore <"$state/ip6tables.saved" || true
  fi
  if [ -f "$state/sysctls.saved" ]; then
    while IFS= read -r kv; do sysctl -q -w "$kv" >/dev/null || log "could not put back $kv"; done <"$state/sysctls.saved"
  fi
  rm -rf "$state"
  log "down: stopped and removed"
}

case "${1:-}" in
  up) up ;;
  load) shift; load "$@" ;;
  check) check ;;
  down) down ;;
  *) echo "usage: hack/nodecluster.sh up | load TAR... | check | down" >&2; exit 2 ;;
esac
