#!/usr/bin/env bash
# Installs and starts what berth's tests and quickstart need, only where it is missing:
# a Docker engine, a private registry on 127.0.0.1:5000 with htpasswd auth, and tiny test images
# made from Debian's busybox-static (no registry access needed to build them).
# Idempotent: safe to run again; it starts nothing that is already running.
set -euo pipefail

STATE_DIR=${BERTH_TEST_STATE:-/var/lib/berth-test}
REGISTRY_ADDR=127.0.0.1:5000
REGISTRY_USER=berth
REGISTRY_PASS=berth-test-secret
LOCAL_IMAGE=berth-test/busybox:latest
PRIVATE_REPO=$REGISTRY_ADDR/berth/private-busybox
# One tag per test area, so a test that pulls with credentials never makes another's anonymous pull succeed.
PRIVATE_TAGS='latest exec errors harbor build k8s mounts seed-001 cli cli-2 cli-3 cli-report sdk pooled k8s-pooled'
PRIVATE_IMAGE=$PRIVATE_REPO:latest

log() { printf '[setup] %s\n' "$*" >&2; }

need_pkgs=()
command -v dockerd >/dev/null 2>&1 || need_pkgs+=(docker.io)
command -v docker-registry >/dev/null 2>&1 || need_pkgs+=(docker-registry)
# The image needs the static build: Debian's plain busybox package is dynamically linked.
dpkg -s busybox-static >/dev/null 2>&1 || need_pkgs+=(busybox-static)
command -v htpasswd >/dev/null 2>&1 || need_pkgs+=(apache2-utils)
command -v curl >/dev/null 2>&1 || need_pkgs+=(curl)
# The Modal simulator's TLS certificates are made at test time.
command -v openssl >/dev/null 2>&1 || need_pkgs+=(openssl)
# report.html is checked in a real headless browser; `script` (util-linux) gives the CLI tests a pty.
command -v chromium >/dev/null 2>&1 || need_pkgs+=(chromium)
command -v script >/dev/null 2>&1 || need_pkgs+=(bsdutils)
# The Docker bridge-limit test fills a bridge with veth pairs in a network namespace of its own.
command -v ip >/dev/null 2>&1 || need_pkgs+=(iproute2)
# Modal's Python SDK runs against the Modal simulator in a venv (modal-sdk.sh); Debian's python3
# makes venvs only with python3-venv (ensurepip's wheels).
if [ "${BERTH_SKIP_MODAL_SDK:-0}" != 1 ]; then
  command -v python3 >/dev/null 2>&1 || need_pkgs+=(python3)
  dpkg -s python3-venv >/dev/null 2>&1 || need_pkgs+=(python3-venv)
fi
if [ "${#need_pkgs[@]}" -gt 0 ]; then
  log "installing ${need_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi
mkdir -p "$STATE_DIR"

# Docker engine. The daemon is started here and left running: CI ends it with the session.
if ! timeout 5 docker info >/dev/null 2>&1; then
  log "starting dockerd"
  # A machine that stopped without ending dockerd keeps its pid file, and dockerd then refuses to start.
  for stale in /var/run/docker.pid /var/run/docker/containerd/containerd.pid; do
    if [ -f "$stale" ] && ! kill -0 "$(cat "$stale")" 2>/dev/null; then rm -f "$stale"; fi
  done
  nohup dockerd >"$STATE_DIR/dockerd.log" 2>&1 &
  echo $! >"$STATE_DIR/dockerd.pid"
  for _ in $(seq 1 60); do
    timeout 5 docker info >/dev/null 2>&1 && break
    sleep 1
  done
  timeout 5 docker info >/dev/null 2>&1 || { log "dockerd did not come up:"; tail -n 30 "$STATE_DIR/dockerd.log" >&2; exit 1; }
fi

# Private registry with htpasswd auth on loopback only. On a systemd host the package starts its
# own registry (stock config, no usable auth) on :5000: stop it, ours takes its place.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet docker-registry 2>/dev/null; then
  log "stopping the distribution's docker-registry service (it holds :5000 without auth)"
  systemctl disable --now docker-registry >/dev/null 2>&1 || true
fi
registry_status() { curl -s -o /dev/null -w '%{http_code}' "http://$REGISTRY_ADDR/v2/" || true; }
status=$(registry_status)
if [ "$status" != 000 ] && [ "$status" != 401 ]; then
  log "something else answers on $REGISTRY_ADDR (HTTP $status to an anonymous /v2/, expected 401): free the port"
  exit 1
fi
if [ "$status" = 000 ]; then
  log "starting docker-registry on $REGISTRY_ADDR"
  mkdir -p "$STATE_DIR/registry-data"
  htpasswd -Bbc "$STATE_DIR/htpasswd" "$REGISTRY_USER" "$REGISTRY_PASS" >/dev/null 2>&1
  cat >"$STATE_DIR/registry.yml" <<YML
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $STATE_DIR/registry-data
  delete:
    enabled: true
http:
  addr: $REGISTRY_ADDR
auth:
  htpasswd:
    realm: berth-test
    path: $STATE_DIR/htpasswd
YML
  nohup docker-registry serve "$STATE_DIR/registry.yml" >"$STATE_DIR/registry.log" 2>&1 &
  echo $! >"$STATE_DIR/registry.pid"
  for _ in $(seq 1 30); do
    [ "$(registry_status)" = 401 ] && break
    sleep 0.5
  done
  [ "$(registry_status)" = 401 ] || { log "registry did not come up with auth"; cat "$STATE_DIR/registry.log" >&2; exit 1; }
fi
# Our credentials must work (an old registry from another setup would refuse them).
auth_status=$(curl -s -o /dev/null -w '%{http_code}' -u "$REGISTRY_USER:$REGISTRY_PASS" "http://$REGISTRY_ADDR/v2/" || true)
[ "$auth_status" = 200 ] || { log "the registry on $REGISTRY_ADDR refuses berth's test credentials (HTTP $auth_status)"; exit 1; }

# Test image: busybox-static as a root filesystem, imported without any registry.
if ! docker image inspect "$LOCAL_IMAGE" >/dev/null 2>&1; then
  log "building $LOCAL_IMAGE from busybox-static"
  root=$(mktemp -d)
  mkdir -p "$root/bin" "$root/tmp" "$root/root" "$root/etc" "$root/proc" "$root/sys" "$root/dev" "$root/logs" "$root/usr/bin"
  chmod 1777 "$root/tmp"
  cp /bin/busybox "$root/bin/busybox"
  for applet in $(/bin/busybox --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
  done
  ln -sf ../../bin/env "$root/usr/bin/env"
  echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
  echo 'root:x:0:' >"$root/etc/group"
  tar -C "$root" -cf "$STATE_DIR/busybox-rootfs.tar" .
  rm -rf "$root"
  docker import -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' -c 'CMD ["/bin/sh"]' \
    "$STATE_DIR/busybox-rootfs.tar" "$LOCAL_IMAGE" >/dev/null
fi
# The image Docker's allowlist tests write packet filters with (options.egressImage).
bash "$(dirname "${BASH_SOURCE[0]}")/egress-image.sh"

# The private image: pushed with credentials, then removed locally so tests really pull it.
# One tag per test file that removes and re-pulls it, so files running in parallel don't race.
for tag in $PRIVATE_TAGS; do
  if ! curl -s -f -o /dev/null -u "$REGISTRY_USER:$REGISTRY_PASS" \
      "http://$REGISTRY_ADDR/v2/berth/private-busybox/manifests/$tag" \
      -H 'Accept: application/vnd.docker.distribution.manifest.v2+json'; then
    log "pushing $PRIVATE_REPO:$tag"
    cfg=$(mktemp -d)
    echo "$REGISTRY_PASS" | DOCKER_CONFIG=$cfg docker login -u "$REGISTRY_USER" --password-stdin "$REGISTRY_ADDR" >/dev/null 2>&1
    docker tag "$LOCAL_IMAGE" "$PRIVATE_REPO:$tag"
    DOCKER_CONFIG=$cfg docker push "$PRIVATE_REPO:$tag" >/dev/null
    rm -rf "$cfg"
  fi
  docker image rm "$PRIVATE_REPO:$tag" >/dev/null 2>&1 || true
done

log "ready: docker $(docker version --format '{{.Server.Version}}'), registry $REGISTRY_ADDR, image $LOCAL_IMAGE, private $PRIVATE_IMAGE"

# Modal's official Python SDK, pinned, for the test that runs it against the Modal simulator
# (BERTH_SKIP_MODAL_SDK=1 leaves it out).
if [ "${BERTH_SKIP_MODAL_SDK:-0}" != 1 ]; then
  bash "$(dirname "$0")/modal-sdk.sh"
fi

# harbor (Python >= 3.12) from PyPI, pinned, with berth's harbor plugin from this checkout, for the
# tests that run harbor itself on berth (BERTH_SKIP_HARBOR=1 leaves it out).
if [ "${BERTH_SKIP_HARBOR:-0}" != 1 ]; then
  bash "$(dirname "$0")/harbor.sh"
fi

# The one-node Kubernetes for the Kubernetes backend's tests (built from Kubernetes' Go modules the
# first time; BERTH_SKIP_KUBE=1 leaves it out, for the Docker-only quickstart).
if [ "${BERTH_SKIP_KUBE:-0}" != 1 ]; then
  bash "$(dirname "$0")/../kube/setup.sh"
fi
