#!/usr/bin/env bash
# A one-node Kubernetes on loopback for berth's Kubernetes tests: Kubernetes' own components
# (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, the kubelet) built from the
# k8s.io/kubernetes Go modules into one binary (test/kube/cmd/kube), the kubelet on Debian's
# containerd with Debian's CNI plugins on a host-only bridge. RBAC on. Writes kubeconfigs to
# $KUBE_STATE (admin.kubeconfig; see the end).
# Idempotent: starts only what is not running, on a new machine or one set up before (its links and
# addresses kept). Under pipefail, `cmd | grep -q` fails when grep exits before cmd has written
# everything (SIGPIPE): the checks below read all of cmd's output. Needs root and
# test/setup/setup.sh (the registry, the test image) to have run.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
KUBE_VERSION=v1.34.4 # the last minor that runs on cgroup v1 without opting in (1.35 refuses it)
KUBE_STATE=${BERTH_KUBE_STATE:-/var/lib/berth-kube}
CACHE_DIR=${BERTH_KUBE_CACHE:-/var/cache/berth-kube}
API=https://127.0.0.1:6443
NODE=berth-node
# The kubelet refuses a loopback node IP: the node gets an address on a link of its own (no ports),
# local to this machine and routed nowhere (cmd/kube/pki.go puts it in the serving certificate).
NODE_IP=10.255.254.1
log() { printf '[kube] %s\n' "$*" >&2; }

need_pkgs=()
command -v containerd >/dev/null 2>&1 || need_pkgs+=(containerd)
[ -x /usr/lib/cni/bridge ] || need_pkgs+=(containernetworking-plugins)
command -v kubectl >/dev/null 2>&1 || need_pkgs+=(kubernetes-client)
/usr/bin/python3 -c 'import kubernetes' >/dev/null 2>&1 || need_pkgs+=(python3-kubernetes) # Debian's python3, not one on PATH
command -v iptables >/dev/null 2>&1 || need_pkgs+=(iptables)
command -v conntrack >/dev/null 2>&1 || need_pkgs+=(conntrack)
command -v ipset >/dev/null 2>&1 || need_pkgs+=(ipset) # kube-router's policy controller
if [ "${#need_pkgs[@]}" -gt 0 ]; then
  log "installing ${need_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi
mkdir -p "$KUBE_STATE" "$CACHE_DIR"

# --- the binary, cached by version and by the module graph that built it ----------------------
key=$(cat "$HERE/go.mod" "$HERE/go.sum" "$HERE"/cmd/kube/*.go | sha256sum | cut -c1-16)
BIN=$CACHE_DIR/kube-$KUBE_VERSION-$key
if [ ! -x "$BIN" ]; then
  log "building Kubernetes $KUBE_VERSION components from Go modules (first time on this machine only)"
  started=$(date +%s)
  v=${KUBE_VERSION#v}
  ldflags="-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=${v%%.*}"
  ldflags="$ldflags -X k8s.io/component-base/version.gitMinor=$(echo "$v" | cut -d. -f2) -X k8s.io/component-base/version.gitTreeState=clean"
  (cd "$HERE" && go build -trimpath -ldflags "$ldflags" -o "$BIN.tmp" ./cmd/kube)
  mv "$BIN.tmp" "$BIN"
  log "built in $(($(date +%s) - started)) s"
fi
ln -sf "$BIN" "$KUBE_STATE/kube"
KUBE=$KUBE_STATE/kube

# The NetworkPolicy enforcer: kube-router's network-policy controller (router/go.mod; see README.md).
ROUTER_VERSION=v2.1.0
key=$(cat "$HERE/router/go.mod" "$HERE/router/go.sum" | sha256sum | cut -c1-16)
ROUTER_BIN=$CACHE_DIR/kube-router-$ROUTER_VERSION-$key
if [ ! -x "$ROUTER_BIN" ]; then
  log "building kube-router $ROUTER_VERSION from its Go module (first time on this machine only)"
  started=$(date +%s)
  (cd "$HERE/router" && go build -trimpath -ldflags "-X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$ROUTER_VERSION" \
    -o "$ROUTER_BIN.tmp" github.com/cloudnativelabs/kube-router/v2/cmd/kube-router)
  mv "$ROUTER_BIN.tmp" "$ROUTER_BIN"
  log "built in $(($(date +%s) - started)) s"
fi
ln -sf "$ROUTER_BIN" "$KUBE_STATE/kube-router"

running() { [ -f "$KUBE_STATE/$1.pid" ] && kill -0 "$(cat "$KUBE_STATE/$1.pid")" 2>/dev/null; }
start() { # name, then the command
  local name=$1
  shift
  running "$name" && return 0
  log "starting $name"
  nohup "$@" >"$KUBE_STATE/$name.log" 2>&1 &
  echo $! >"$KUBE_STATE/$name.pid"
}
wait_for() { # what, seconds, then the check
  local what=$1 seconds=$2
  shift 2
  for _ in $(seq 1 "$seconds"); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 1
  done
  log "$what did not come up"
  for f in "$KUBE_STATE"/*.log; do echo "== $f" >&2; tail -n 20 "$f" >&2; done
  exit 1
}

# --- PKI and kubeconfigs -------------------------------------------------------------------------
PKI=$KUBE_STATE/pki
[ -f "$PKI/ca.crt" ] || "$KUBE" pki "$PKI"
kubeconfig() { # file, certificate name
  cat >"$KUBE_STATE/$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: berth-test
  cluster: { server: $API, certificate-authority: $PKI/ca.crt }
users:
- name: $2
  user: { client-certificate: $PKI/$2.crt, client-key: $PKI/$2.key }
contexts:
- name: berth-test
  context: { cluster: berth-test, user: $2 }
current-context: berth-test
EOF
}
for who in admin controller-manager scheduler kubelet; do kubeconfig "$who.kubeconfig" "$who"; done

# --- control plane -----------------------------------------------------------------------------
start etcd "$KUBE" etcd --data-dir "$KUBE_STATE/etcd" --listen-client-urls http://127.0.0.1:2379 \
  --advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 --log-level warn
wait_for etcd 30 curl -sf http://127.0.0.1:2379/health

# The API server listens on every local address so that pods reach it through the kubernetes
# service (10.0.0.1:443, kube-proxy below), as on a real cluster: its endpoint is the node's address.
# Only this machine and its pods may connect (a rule in INPUT drops anyone else).
rule=(INPUT -p tcp --dport 6443 ! -s 10.244.0.0/24 -m addrtype ! --src-type LOCAL -j DROP)
iptables -w -C "${rule[@]}" 2>/dev/null || iptables -w -I "${rule[@]}"
start apiserver "$KUBE" apiserver --etcd-servers http://127.0.0.1:2379 \
  --bind-address 0.0.0.0 --advertise-address "$NODE_IP" --secure-port 6443 \
  --service-cluster-ip-range 10.0.0.0/24 --authorization-mode Node,RBAC \
  --client-ca-file "$PKI/ca.crt" --tls-cert-file "$PKI/serving.crt" --tls-private-key-file "$PKI/serving.key" \
  --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority "$PKI/ca.crt" \
  --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$PKI/sa.pub" \
  --service-account-signing-key-file "$PKI/sa.key" --enable-admission-plugins NodeRestriction \
  --kubelet-preferred-address-types InternalIP --allow-privileged=false --profiling=false
wait_for apiserver 90 curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$API/readyz"

start controller-manager "$KUBE" controller-manager --kubeconfig "$KUBE_STATE/controller-manager.kubeconfig" \
  --authentication-kubeconfig "$KUBE_STATE/controller-manager.kubeconfig" \
  --authorization-kubeconfig "$KUBE_STATE/controller-manager.kubeconfig" \
  --bind-address 127.0.0.1 --use-service-account-credentials \
  --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
  --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
  --controllers '*' --leader-elect=false
start scheduler "$KUBE" scheduler --kubeconfig "$KUBE_STATE/scheduler.kubeconfig" \
  --authentication-kubeconfig "$KUBE_STATE/scheduler.kubeconfig" --authorization-kubeconfig "$KUBE_STATE/scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --leader-elect=false

if ! ip -o addr show dev berth-kube0 2>/dev/null | grep -F "$NODE_IP/" >/dev/null; then
  # A bridge with no ports: the kernel here has no dummy links; this works the same.
  ip link add berth-kube0 type bridge 2>/dev/null || true
  ip addr replace "$NODE_IP/32" dev berth-kube0
  ip link set berth-kube0 up
fi

# --- the node: containerd (its own socket and state, beside Docker's), CNI, the kubelet ---------
CTRD=$KUBE_STATE/containerd
CTRD_SOCK=/run/berth-containerd/containerd.sock
mkdir -p "$CTRD" /run/berth-containerd "$KUBE_STATE/cni/net.d" "$KUBE_STATE/kubelet"
cat >"$CTRD/config.toml" <<EOF
version = 2
root = "$CTRD/root"
state = "/run/berth-containerd/state"
[grpc]
  address = "$CTRD_SOCK"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/berth-test/pause:1"
  # Root here lacks CAP_SYS_RESOURCE: an oom_score_adj below containerd's own (the pause
  # container's -998, a Guaranteed pod's -997) makes runc fail at start. Keep them at 0 or above.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$KUBE_STATE/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."127.0.0.1:5000"]
    endpoint = ["http://127.0.0.1:5000"]
EOF
# Pods on a host-only bridge: no route out but to the services' range (kube-proxy), no masquerading.
# Pod addresses end at .250: .251-.254 are this machine's test addresses on the bridge (below).
cat >"$KUBE_STATE/cni/net.d/10-berth.conflist" <<EOF
{ "cniVersion": "0.4.0", "name": "berth", "plugins": [
  { "type": "bridge", "bridge": "berth0", "isGateway": true, "ipMasq": false,
    "ipam": { "type": "host-local", "ranges": [[{ "subnet": "10.244.0.0/24", "rangeEnd": "10.244.0.250" }]], "routes": [{ "dst": "10.0.0.0/24" }] } },
  { "type": "portmap", "capabilities": { "portMappings": true } } ] }
EOF
# The bridge itself, made now rather than by the first pod: tests listen on its address (10.244.0.1)
# before they start any pod. The CNI plugin adopts it (the address it would give is already there).
if ! ip link show berth0 >/dev/null 2>&1; then
  ip link add berth0 type bridge
fi
ip addr replace 10.244.0.1/24 dev berth0
# A second address of this machine that pods reach, for allowlist tests (one address allowed, one not).
# `replace`, not `add`: idempotent when the address is already there (a machine set up before).
ip addr replace 10.244.0.254/32 dev berth0
ip link set berth0 up
start containerd containerd --config "$CTRD/config.toml"
wait_for containerd 30 ctr --address "$CTRD_SOCK" version
CTR=(ctr --address "$CTRD_SOCK" -n k8s.io)

# The pause image and the test image, made locally (no registry on the internet is reachable).
if ! "${CTR[@]}" images ls -q | grep -x 'docker.io/berth-test/pause:1' >/dev/null; then
  log "importing the pause and test images into containerd"
  tmp=$(mktemp -d)
  printf 'FROM berth-test/busybox:latest\nENTRYPOINT ["/bin/sleep", "2147483647"]\n' >"$tmp/Dockerfile"
  docker build -q -t berth-test/pause:1 "$tmp" >/dev/null
  docker save berth-test/pause:1 berth-test/busybox:latest -o "$tmp/images.tar"
  "${CTR[@]}" images import "$tmp/images.tar" >/dev/null
  rm -rf "$tmp"
fi

# The image of berth's egress proxy pod in the tests (options.egressProxy.image): this machine's node
# and the libraries it links, imported without any registry.
NODE_IMAGE=berth-test/node:20
if ! "${CTR[@]}" images ls -q | grep -x "docker.io/$NODE_IMAGE" >/dev/null; then
  log "importing $NODE_IMAGE (this machine's node) into containerd"
  tmp=$(mktemp -d)
  root="$tmp/root"
  mkdir -p "$root/usr/local/bin" "$root/tmp"
  node_bin=$(readlink -f "$(command -v node)")
  cp "$node_bin" "$root/usr/local/bin/node"
  for lib in $(ldd "$node_bin" | grep -o '/[^ ]*'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
  tar -C "$root" -cf "$tmp/rootfs.tar" .
  docker import -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' "$tmp/rootfs.tar" "$NODE_IMAGE" >/dev/null
  docker save "$NODE_IMAGE" -o "$tmp/node.tar"
  "${CTR[@]}" images import "$tmp/node.tar" >/dev/null
  docker rmi "$NODE_IMAGE" >/dev/null
  rm -rf "$tmp"
fi

cat >"$KUBE_STATE/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
authentication:
  x509: { clientCAFile: $PKI/ca.crt }
  webhook: { enabled: true }
  anonymous: { enabled: false }
authorization: { mode: Webhook }
tlsCertFile: $PKI/serving.crt
tlsPrivateKeyFile: $PKI/serving.key
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: unix://$CTRD_SOCK
clusterDomain: cluster.local
resolvConf: ""
staticPodPath: ""
evictionHard: { memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%" }
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
start kubelet "$KUBE" kubelet --config "$KUBE_STATE/kubelet/config.yaml" --kubeconfig "$KUBE_STATE/kubelet.kubeconfig" \
  --hostname-override "$NODE" --node-ip "$NODE_IP" --root-dir "$KUBE_STATE/kubelet/root"
node_ready() { kubectl --kubeconfig "$KUBE_STATE/admin.kubeconfig" get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' | grep True >/dev/null; }
wait_for "node $NODE Ready" 120 node_ready

# NetworkPolicy, enforced on the host with iptables and ipsets: the policy controller only (no
# routing, no service proxy, no CNI: the bridge above stays), health and metrics off (no ports).
# --iptables-sync-period: a pod event kube-router missed or was slow to act on (a loaded node) is
# caught within 20 s by a full sync, not the default 5 minutes.
start kube-router "$KUBE_STATE/kube-router" --run-firewall --run-router=false --run-service-proxy=false --enable-cni=false \
  --iptables-sync-period 20s \
  --hostname-override "$NODE" --kubeconfig "$KUBE_STATE/admin.kubeconfig" --service-cluster-ip-range 10.0.0.0/24 \
  --health-port 0 --metrics-port 0
wait_for "kube-router's policy chains" 60 iptables -w -n -L KUBE-ROUTER-INPUT

# Services, as a real cluster has them: kube-proxy (iptables mode) from the same binary, so that
# 10.0.0.1:443 (the kubernetes service, KUBERNETES_SERVICE_HOST in every pod) reaches the API server
# and berth's default network proof works. It leaves the host's sysctls alone (conntrack limits,
# route_localnet) and serves health and metrics on loopback only.
start kube-proxy "$KUBE" proxy --kubeconfig "$KUBE_STATE/admin.kubeconfig" --hostname-override "$NODE" \
  --proxy-mode iptables --cluster-cidr 10.244.0.0/24 --conntrack-max-per-core 0 \
  --conntrack-tcp-timeout-established 0 --conntrack-tcp-timeout-close-wait 0 --iptables-localhost-nodeports=false \
  --healthz-bind-address 127.0.0.1:10256 --metrics-bind-address 127.0.0.1:10249
service_proxied() { iptables -w -t nat -S KUBE-SERVICES | grep -F 'default/kubernetes:https' >/dev/null; }
wait_for "kube-proxy's rule for the kubernetes service" 60 service_proxied

# --- the tests' namespace and identity: a service account bound only to berth's Role ----------
K=(kubectl --kubeconfig "$KUBE_STATE/admin.kubeconfig")
wait_for "the default service account" 60 "${K[@]}" -n default get serviceaccount default
"${K[@]}" apply --validate=false -f "$HERE/berth-test.yaml" >/dev/null
"${K[@]}" -n berth-test apply --validate=false -f "$HERE/../../packages/backend-k8s/deploy/role.yaml" >/dev/null
token_ready() { [ -n "$("${K[@]}" -n berth-test get secret berth-token -o jsonpath='{.data.token}')" ]; }
wait_for "the berth service account's token" 60 token_ready
token=$("${K[@]}" -n berth-test get secret berth-token -o jsonpath='{.data.token}' | base64 -d)
cat >"$KUBE_STATE/berth.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: berth-test
  cluster: { server: $API, certificate-authority: $PKI/ca.crt }
users:
- name: berth
  user: { token: $token }
contexts:
- name: berth-test
  context: { cluster: berth-test, user: berth, namespace: berth-test }
current-context: berth-test
EOF
chmod 600 "$KUBE_STATE/berth.kubeconfig"

log "ready: $API (kubeconfigs: $KUBE_STATE/admin.kubeconfig, $KUBE_STATE/berth.kubeconfig for namespace berth-test), node $NODE"

# The scale test bed: a second control plane on loopback with 1,000 fake nodes run by kwok
# (test/kube/scale/README.md). BERTH_SKIP_SCALE=1 leaves it out.
if [ "${BERTH_SKIP_SCALE:-0}" != 1 ]; then
  bash "$HERE/scale/setup.sh"
fi
