#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Makes a debian:bookworm-slim root filesystem tarball with debootstrap, for machines that reach
# Debian's archive but no container registry (the docker test; air-gapped builders). Prints the
# tarball's path. Cached: a tarball already there is reused (delete it to refresh).
#   bash deploy/base-image.sh            -> /var/cache/skbnf/debian-bookworm-slim.tar
#   docker import "$(bash deploy/base-image.sh)" debian:bookworm-slim
# Environment: SKBNF_CACHE (default /var/cache/skbnf), SKBNF_DEBIAN_MIRROR (default: the first
# deb.debian.org-style URI apt uses here, else http://deb.debian.org/debian).
# Slimmed like the official -slim image: no docs, man pages, locales or apt lists.
set -euo pipefail
CACHE=${SKBNF_CACHE:-/var/cache/skbnf}
OUT=$CACHE/debian-bookworm-slim.tar
if [ -s "$OUT" ]; then
  echo "$OUT"
  exit 0
fi
MIRROR=${SKBNF_DEBIAN_MIRROR:-}
if [ -z "$MIRROR" ]; then
  MIRROR=$(sed -n 's/^URIs: *\([^ ]*\/debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
    head -1)
  MIRROR=${MIRROR:-http://deb.debian.org/debian}
fi
command -v debootstrap >/dev/null || { echo "base-image: debootstrap missing (deploy/deps.sh)" >&2; exit 1; }
mkdir -p "$CACHE"
ROOT=$(mktemp -d "$CACHE/rootfs.XXXXXX")
trap 'rm -rf "$ROOT"' EXIT
echo "base-image: debootstrap bookworm from $MIRROR (once per machine, ~2 min)" >&2
debootstrap --variant=minbase bookworm "$ROOT" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 || {
  tail -20 "$CACHE/debootstrap.log" >&2
  exit 1
}
rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/cache/apt/*.bin "$ROOT"/var/cache/apt/archives/*.deb \
  "$ROOT"/usr/share/doc/* "$ROOT"/usr/share/man/* "$ROOT"/usr/share/info/* \
  "$ROOT"/usr/share/locale/* "$ROOT"/var/log/*.log "$ROOT"/tmp/* 2>/dev/null || true
# What the official image sets: no recommends/suggests, no docs on later installs.
cat >"$ROOT/etc/dpkg/dpkg.cfg.d/docker" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
CFG
printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
  >"$ROOT/etc/apt/apt.conf.d/docker-no-recommends"
tar -C "$ROOT" --numeric-owner -cf "$OUT.tmp" .
mv "$OUT.tmp" "$OUT"
echo "$OUT"
