#!/usr/bin/env bash
# Make the Debian bookworm base image kinspect's Kafka image is built FROM, tagged
# kinspect/debian:bookworm. Where a registry answers, the ordinary debian:bookworm-slim is pulled
# and tagged; where none does (this project's build machines reach Debian's package mirror and
# nothing else), the same Debian is made with debootstrap and imported. Either way the Kafka
# image on top installs the same packages, so both paths end in the same image.
#
# usage: docker/make-base-image.sh [--force]       (root is needed for debootstrap)
# env:   DEBIAN_MIRROR (default: the Debian mirror this machine's apt already uses)
set -euo pipefail

TAG="kinspect/debian:bookworm"

say() { echo "$*" >&2; }

# The mirror apt uses here, from its own sources (deb822 *.sources or one-line *.list): the
# first Debian archive URI that is not the security archive. No host name lives in this repo.
apt_mirror() {
  local files=(/etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list)
  { grep -hsE '^[[:space:]]*URIs:' "${files[@]}" | sed -E 's/^[[:space:]]*URIs:[[:space:]]*//' | tr ' ' '\n'
    grep -hsE '^[[:space:]]*deb[[:space:]]' "${files[@]}" \
      | sed -E 's/^[[:space:]]*deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/'
  } | grep -E '^https?://' | grep -v -- '-security' | grep -E '/debian/?$' | head -1 | sed 's:/$::' \
    || true  # no sources at all: the caller says so
}
MIRROR="${DEBIAN_MIRROR:-$(apt_mirror)}"

if [ "${1:-}" != "--force" ] && docker image inspect "$TAG" >/dev/null 2>&1; then
  say "base image $TAG is already here"
  exit 0
fi

if timeout 60 docker pull -q debian:bookworm-slim >/dev/null 2>&1; then
  docker tag debian:bookworm-slim "$TAG"
  say "base image $TAG: pulled debian:bookworm-slim"
  exit 0
fi

if [ -z "$MIRROR" ]; then
  say "error: no Debian mirror in this machine's apt sources; set DEBIAN_MIRROR"
  exit 2
fi
say "no registry answers; making $TAG with debootstrap from $MIRROR (about a minute)"
if [ "$(id -u)" != 0 ]; then
  say "error: debootstrap needs root (or a registry to pull debian:bookworm-slim from)"
  exit 2
fi
if ! command -v debootstrap >/dev/null; then
  say "error: debootstrap is not installed (apt-get install debootstrap)"
  exit 2
fi
rootfs="$(mktemp -d /tmp/kinspect-rootfs.XXXXXX)"
trap 'rm -rf "$rootfs"' EXIT
debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >"$rootfs.log" 2>&1 || {
  say "error: debootstrap failed: $(tail -1 "$rootfs.log")"; rm -f "$rootfs.log"; exit 1; }
rm -f "$rootfs.log"
# What debian:bookworm-slim also does: no docs or caches kept, apt cleans after itself.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
tar -C "$rootfs" -c . | docker import \
  --change 'CMD ["bash"]' --change 'ENV LANG=C.UTF-8' \
  --message "debootstrap --variant=minbase bookworm $MIRROR" - "$TAG" >/dev/null
say "base image $TAG: made with debootstrap ($(docker image inspect -f '{{.Size}}' "$TAG" | numfmt --to=iec))"
