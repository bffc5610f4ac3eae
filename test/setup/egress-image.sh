#!/usr/bin/env bash
# berth-test/egress: an image with iptables-restore for Docker's allowlist tests (options.egressImage),
# made from this machine's own Debian iptables (no registry on the internet is reachable here):
# xtables-nft-multi, the libraries it links, and the extensions it loads. Idempotent.
set -euo pipefail
IMAGE=berth-test/egress:latest
docker image inspect "$IMAGE" >/dev/null 2>&1 && exit 0
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
# The binary's libraries and the extensions', with the loader.
for f in "$bin" "$xt"/*.so; do
  for lib in $(ldd "$f" | grep -o '/[^ ]*'); do
    mkdir -p "$root$(dirname "$lib")"
    [ -e "$root$lib" ] || cp -L "$lib" "$root$lib"
  done
done
tar -C "$root" -c . | docker import -c 'ENTRYPOINT ["iptables-restore"]' -c 'LABEL berth.test=egress-image' - "$IMAGE" >/dev/null
echo "[setup] made $IMAGE"
