#!/usr/bin/env bash
# The docker compose plugin that bench/compose.mjs compares berth with, built from the Go module
# proxy (nothing else is reachable here) into /usr/local/lib/docker/cli-plugins, once.
#   bash bench/setup-compose.sh
set -euo pipefail
VERSION="${BERTH_COMPOSE_VERSION:-v5.6.0}"
PLUGINS=/usr/local/lib/docker/cli-plugins
if docker compose version >/dev/null 2>&1; then
  echo "[compose] $(docker compose version)"
  exit 0
fi
CACHE=/var/cache/berth-compose/$VERSION
if [ ! -x "$CACHE/cmd" ]; then
  echo "[compose] building github.com/docker/compose/v5 $VERSION from the module proxy (a few minutes cold)"
  mkdir -p "$CACHE"
  # Its go.mod has exclude directives, which `go install pkg@version` refuses: built as the main module.
  src=$(cd /tmp && go mod download -json "github.com/docker/compose/v5@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  work=$(mktemp -d)
  cp -r "$src/." "$work/"
  chmod -R u+w "$work"
  (cd "$work" && go build -trimpath -o "$CACHE/cmd" ./cmd)
  rm -rf "$work"
fi
mkdir -p "$PLUGINS"
install -m 0755 "$CACHE/cmd" "$PLUGINS/docker-compose"
echo "[compose] $(docker compose version)"
