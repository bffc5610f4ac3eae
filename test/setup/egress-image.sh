#!/usr/bin/env bash
# berth-test/egress: an image with iptables-restore for Docker's allowlist tests (options.egressImage),
# made from this machine's own Debian iptables (no registry on the internet is reachable here):
# xtables-nft-multi, the libraries it links, and the extensions it loads; and the Modal simulator's
# sni-gate (test/egress/sni-gate, Go's standard library only). Idempotent: remade when this script
# or the gate's source changes (the image's berth.egress.key label).
set -euo pipefail
IMAGE=berth-test/egress:latest
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../egress" && pwd)
key=$(cat "${BASH_SOURCE[0]}" "$HERE"/sni-gate/go.mod "$HERE"/sni-gate/*.go | sha256sum | cut -c1-16)
[ "$(docker image inspect -f '{{index .Config.Labels "berth.egress.key"}}' "$IMAGE" 2>/dev/null)" = "$key" ] && exit 0
old=$(docker image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)
command -v xtables-nft-multi >/dev/null 2>&1 || { apt-get install -y -qq iptables >/dev/null; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
bin=$(command -v xtables-nft-multi)
xt=$(ls -d /usr/lib/*/xtables | head -1)
mkdir -p "$root/usr/sbin" "$root/run" "$root/etc" "$root$xt"
cp "$bin" "$root/usr/sbin/xtables-nft-multi"
ln -s xtables-nft-multi "$root/usr/sbin/iptables-restore"
ln -s xtables-nft-multi "$root/usr/sbin/ip6tables-restore"
cp -a "$xt/." "$root$xt/"
(cd "$HERE/sni-gate" && CGO_ENABLED=0 go build -trimpath -o "$root/usr/sbin/sni-gate" .)
# The binary's libraries and the extensions', with the loader.
for f in "$bin" "$xt"/*.so; do
  for lib in $(ldd "$f" | grep -o '/[^ ]*'); do
    mkdir -p "$root$(dirname "$lib")"
    [ -e "$root$lib" ] || cp -L "$lib" "$root$lib"
  done
done
tar -C "$root" -c . | docker import -c 'ENTRYPOINT ["iptables-restore"]' -c 'LABEL berth.test=egress-image' -c "LABEL berth.egress.key=$key" - "$IMAGE" >/dev/null
# The image this one replaces, unless a container still uses it.
[ -n "$old" ] && docker image rm "$old" >/dev/null 2>&1 || true
echo "[setup] made $IMAGE"
