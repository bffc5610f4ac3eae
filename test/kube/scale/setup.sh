#!/usr/bin/env bash
# The scale test bed: a second, lean Kubernetes control plane on loopback whose 1,000 nodes are
# fake, run by kwok (sigs.k8s.io/kwok): scheduled pods turn Running at once and deleted ones go at
# once, with no container anywhere. etcd, kube-apiserver and kube-scheduler come from the test
# cluster's `kube` binary (run test/kube/setup.sh first); kwok is built from go.mod here. No
# controller-manager: nothing needs one (see README.md). Writes admin.kubeconfig and
# berth.kubeconfig (berth's Role, namespace berth-scale) to $SCALE_STATE.
# Idempotent: starts only what is not running, makes only the nodes that are missing. Needs root.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
KWOK_VERSION=v0.8.0 # as pinned in go.mod
SCALE_STATE=${BERTH_KUBE_SCALE_STATE:-/var/lib/berth-kube-scale}
CACHE_DIR=${BERTH_KUBE_CACHE:-/var/cache/berth-kube}
KUBE=${BERTH_KUBE_STATE:-/var/lib/berth-kube}/kube
NODES=${BERTH_SCALE_NODES:-1000}
NAMESPACE=berth-scale
# Loopback ports below the ephemeral range, clear of the test cluster's (2379/2380, 6443, 10250-10259).
ETCD_PORT=12379 ETCD_PEER_PORT=12380 API_PORT=16443 SCHEDULER_PORT=16259 KWOK_PORT=16250
API=https://127.0.0.1:$API_PORT
began=${EPOCHREALTIME/./}
log() { # with the seconds since the start
  local us=$((${EPOCHREALTIME/./} - began))
  printf '[kube-scale %d.%ds] %s\n' $((us / 1000000)) $((us / 100000 % 10)) "$*" >&2
}

[ -x "$KUBE" ] || { log "no $KUBE: run test/kube/setup.sh first (it builds the kube binary)"; exit 1; }
command -v kubectl >/dev/null 2>&1 || { log "no kubectl: run test/kube/setup.sh first"; exit 1; }
mkdir -p "$SCALE_STATE" "$CACHE_DIR"

# --- kwok, cached by version and by the module graph that built it ----------------------------
key=$(cat "$HERE/go.mod" "$HERE/go.sum" | sha256sum | cut -c1-16)
KWOK_BIN=$CACHE_DIR/kwok-$KWOK_VERSION-$key
if [ ! -x "$KWOK_BIN" ]; then
  log "building kwok $KWOK_VERSION from its Go module (first time on this machine only)"
  (cd "$HERE" && go build -trimpath -o "$KWOK_BIN.tmp" sigs.k8s.io/kwok/cmd/kwok)
  mv "$KWOK_BIN.tmp" "$KWOK_BIN"
  log "built kwok"
fi
ln -sf "$KWOK_BIN" "$SCALE_STATE/kwok"

running() { [ -f "$SCALE_STATE/$1.pid" ] && kill -0 "$(cat "$SCALE_STATE/$1.pid")" 2>/dev/null; }
start() { # name, then the command
  local name=$1
  shift
  running "$name" && return 0
  log "starting $name"
  nohup "$@" >"$SCALE_STATE/$name.log" 2>&1 &
  echo $! >"$SCALE_STATE/$name.pid"
}
wait_for() { # what, tenths of a second, then the check
  local what=$1 tenths=$2
  shift 2
  for _ in $(seq 1 "$tenths"); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  log "$what did not come up"
  for f in "$SCALE_STATE"/*.log; do echo "== $f" >&2; tail -n 20 "$f" >&2; done
  exit 1
}

# --- PKI and kubeconfigs (the test cluster's tool, a CA of this bed's own) ----------------------
PKI=$SCALE_STATE/pki
[ -f "$PKI/ca.crt" ] || "$KUBE" pki "$PKI" >/dev/null
kubeconfig() { # file, certificate name
  cat >"$SCALE_STATE/$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: berth-scale
  cluster: { server: $API, certificate-authority: $PKI/ca.crt }
users:
- name: $2
  user: { client-certificate: $PKI/$2.crt, client-key: $PKI/$2.key }
contexts:
- name: berth-scale
  context: { cluster: berth-scale, user: $2 }
current-context: berth-scale
EOF
}
for who in admin scheduler; do kubeconfig "$who.kubeconfig" "$who"; done
K=(kubectl --kubeconfig "$SCALE_STATE/admin.kubeconfig")

# --- control plane -----------------------------------------------------------------------------
# A throwaway store: no fsync, a quota well above what 10,000 pods take.
start etcd "$KUBE" etcd --name scale --data-dir "$SCALE_STATE/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "scale=http://127.0.0.1:$ETCD_PEER_PORT" \
  --unsafe-no-fsync --quota-backend-bytes $((4 * 1024 * 1024 * 1024)) --log-level warn
wait_for etcd 300 curl -sf "http://127.0.0.1:$ETCD_PORT/health"

# Loopback only. TaintNodesByCondition off: it puts the not-ready taint on every new node, and only
# the controller-manager (absent here) takes it off. No endpoint reconciler: the `kubernetes`
# service's endpoint would be a loopback address, which Endpoints refuse. The kubelet API of every
# node is kwok's server on 127.0.0.1, checked against this bed's CA.
start apiserver "$KUBE" apiserver --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" --endpoint-reconciler-type none \
  --service-cluster-ip-range 10.1.0.0/24 --authorization-mode Node,RBAC \
  --client-ca-file "$PKI/ca.crt" --tls-cert-file "$PKI/serving.crt" --tls-private-key-file "$PKI/serving.key" \
  --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority "$PKI/ca.crt" --kubelet-preferred-address-types InternalIP \
  --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$PKI/sa.pub" \
  --service-account-signing-key-file "$PKI/sa.key" --disable-admission-plugins TaintNodesByCondition \
  --allow-privileged=false --profiling=false
ready() { curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$API/readyz"; }
wait_for apiserver 900 ready

# The default client caps the scheduler at 50 requests/s (a bind is one): raised, and it scores a
# tenth of the nodes (at least 100) rather than about 40% of 1,000.
cat >"$SCALE_STATE/scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: $SCALE_STATE/scheduler.kubeconfig
  qps: 1000
  burst: 2000
leaderElection:
  leaderElect: false
percentageOfNodesToScore: 10
EOF
start scheduler "$KUBE" scheduler --config "$SCALE_STATE/scheduler.yaml" \
  --authentication-kubeconfig "$SCALE_STATE/scheduler.kubeconfig" --authorization-kubeconfig "$SCALE_STATE/scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" --tls-cert-file "$PKI/serving.crt" --tls-private-key-file "$PKI/serving.key"

# kwok: the nodes' kubelets. Its configuration is the whole of it (kwok.yaml: no defaults apply).
# Its kubelet API (exec) on 127.0.0.1:$KWOK_PORT, every node's address, with this bed's serving cert.
# Warnings only: at INFO it logs a line for every status it writes.
mkdir -p "$SCALE_STATE/exec"
chown 65534:65534 "$SCALE_STATE/exec"
sed "s#/var/lib/berth-kube-scale#$SCALE_STATE#g" "$HERE/kwok.yaml" >"$SCALE_STATE/kwok.yaml.new"
# A kwok running an older configuration is restarted with this one.
if running kwok && ! cmp -s "$SCALE_STATE/kwok.yaml.new" "$SCALE_STATE/kwok.yaml"; then
  log "restarting kwok: its configuration changed"
  pid=$(cat "$SCALE_STATE/kwok.pid")
  kill "$pid"
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
fi
mv "$SCALE_STATE/kwok.yaml.new" "$SCALE_STATE/kwok.yaml"
start kwok "$SCALE_STATE/kwok" -v WARN -c "$SCALE_STATE/kwok.yaml" --kubeconfig "$SCALE_STATE/admin.kubeconfig" \
  --node-ip 127.0.0.1 --node-port "$KWOK_PORT" --server-address "127.0.0.1:$KWOK_PORT" \
  --tls-cert-file "$PKI/serving.crt" --tls-private-key-file "$PKI/serving.key"
wait_for kwok 300 curl -sf --cacert "$PKI/ca.crt" "https://127.0.0.1:$KWOK_PORT/healthz"
wait_for scheduler 300 curl -sf --cacert "$PKI/ca.crt" "https://127.0.0.1:$SCHEDULER_PORT/healthz"

# --- the nodes: made Ready by kwok (no taint: see the API server above) -------------------------
# Both an InternalIP and a Hostname address: kwok's stages fill in a missing one and lose the other.
node_yaml() { # name
  cat <<EOF
apiVersion: v1
kind: Node
metadata:
  name: $1
  annotations: { kwok.x-k8s.io/node: fake }
  labels: { type: kwok, kubernetes.io/hostname: $1, kubernetes.io/os: linux, kubernetes.io/arch: amd64 }
status:
  addresses: [{ type: InternalIP, address: 127.0.0.1 }, { type: Hostname, address: $1 }]
  allocatable: { cpu: "64", memory: 512Gi, pods: "110" }
  capacity: { cpu: "64", memory: 512Gi, pods: "110" }
EOF
}
# The API read raw (kubectl takes seconds over 1,000 nodes on a busy machine).
nodes_json() { curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$API/api/v1/nodes?labelSelector=type%3Dkwok&pretty=false"; }
have=$(nodes_json | grep -o '"name":"kwok-node-[0-9]*"' | cut -d'"' -f4 | sort || true)
missing=$(for i in $(seq -f '%04g' 1 "$NODES"); do echo "kwok-node-$i"; done | sort | comm -23 - <(echo "$have"))
if [ -n "$missing" ]; then
  log "making $(echo "$missing" | wc -l) nodes"
  # One curl, 32 requests at a time over HTTP/2: kubectl makes one request after the other, and
  # 1,000 of them took minutes on a busy machine.
  tmp=$(mktemp -d)
  for name in $missing; do
    node_yaml "$name" >"$tmp/$name.yaml"
    printf 'url = "%s/api/v1/nodes"\ndata-binary = "@%s"\nheader = "Content-Type: application/yaml"\ncacert = "%s"\ncert = "%s"\nkey = "%s"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\nsilent\nnext\n' \
      "$API" "$tmp/$name.yaml" "$PKI/ca.crt" "$PKI/admin.crt" "$PKI/admin.key"
  done | sed '$d' >"$tmp/curl.conf" # no "next" after the last
  codes=$(curl --no-progress-meter --http2 --parallel --parallel-max 32 -K "$tmp/curl.conf" | sort | uniq -c)
  rm -rf "$tmp"
  # 201 made, 409 already there (another setup at the same time).
  if echo "$codes" | grep -vqE ' (201|409)$'; then
    log "making nodes failed: HTTP status counts: $codes"
    exit 1
  fi
fi
ready_count() { nodes_json | grep -o '"type":"Ready","status":"True"' | wc -l; }
for _ in $(seq 1 300); do
  [ "$(ready_count || true)" -ge "$NODES" ] && break
  sleep 1
done
if [ "$(ready_count || true)" -lt "$NODES" ]; then
  log "kwok did not make the $NODES nodes Ready within 300 s"
  tail -n 30 "$SCALE_STATE/kwok.log" >&2
  exit 1
fi
log "$NODES nodes Ready"

# --- berth's namespace and identity: a service account bound only to berth's Role ---------------
"${K[@]}" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata: { name: $NAMESPACE }
---
# What pods that name no service account run as (the controller-manager would make it).
apiVersion: v1
kind: ServiceAccount
metadata: { name: default, namespace: $NAMESPACE }
---
apiVersion: v1
kind: ServiceAccount
metadata: { name: berth, namespace: $NAMESPACE }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: berth, namespace: $NAMESPACE }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: berth }
subjects: [{ kind: ServiceAccount, name: berth, namespace: $NAMESPACE }]
EOF
"${K[@]}" -n "$NAMESPACE" apply -f "$HERE/../../../packages/backend-k8s/deploy/role.yaml" >/dev/null
# A token from the TokenRequest API (a token Secret needs the controller-manager), kept while it works.
BERTH_KC=$SCALE_STATE/berth.kubeconfig
if ! kubectl --kubeconfig "$BERTH_KC" auth can-i create pods >/dev/null 2>&1; then
  token=$("${K[@]}" -n "$NAMESPACE" create token berth --duration 8760h)
  (
    umask 077
    cat >"$BERTH_KC" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: berth-scale
  cluster: { server: $API, certificate-authority: $PKI/ca.crt }
users:
- name: berth
  user: { token: $token }
contexts:
- name: berth-scale
  context: { cluster: berth-scale, user: berth, namespace: $NAMESPACE }
current-context: berth-scale
EOF
  )
fi

log "ready: $API, $NODES kwok nodes (kubeconfigs: $SCALE_STATE/admin.kubeconfig, $BERTH_KC for namespace $NAMESPACE)"
