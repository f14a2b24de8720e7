#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The image's base and its pinned packages (deploy/Dockerfile).
#
#   bash deploy/base-image.sh            makes a debian:bookworm-slim-like root filesystem
#                                        tarball with debootstrap (machines that reach Debian's
#                                        archive but no container registry: the docker test,
#                                        air-gapped builders), checks its packages against the
#                                        lock, prints the tarball's path. Cached: a tarball
#                                        already there is reused (delete it to refresh).
#   bash deploy/base-image.sh --import   the same, then `docker import`s it (DOCKER_HOST) and
#                                        prints the base by digest for --build-arg BASE=:
#                                        skbnf-base:sha256-<hex>, a tag that is the sha256 of
#                                        the tarball = the image's only layer (its diff id,
#                                        `docker image inspect -f '{{.RootFS.Layers}}'`).
#                                        dockerd's BuildKit cannot take a local image by id or
#                                        @digest (it asks the registry), hence the tag; the
#                                        docker test checks the built image sits on exactly
#                                        that layer.
#   bash deploy/base-image.sh pins PKG...  PKG=VERSION for each PKG from the lock (the
#                                        Dockerfile's apt-get install); exit 1 naming a PKG the
#                                        lock lacks
#   bash deploy/base-image.sh check      compares every installed package (dpkg-query -W)
#                                        with the lock; exit 1 with the difference and how to
#                                        refresh the lock (the Dockerfile's last install step)
#
# The lock, deploy/image-packages.lock: every Debian package of the runtime image,
# PACKAGE=VERSION sorted (LC_ALL=C), amd64; the same text as the image's
# /usr/share/doc/skbnf/sbom-dpkg.txt. A Debian point release changes versions: the build then
# fails saying which ones, instead of shipping what it happened to get. To take the new
# versions (security fixes): build with --build-arg PACKAGES_LOCK=update and copy the image's
# /usr/share/doc/skbnf/sbom-dpkg.txt over deploy/image-packages.lock (deploy/README.md,
# "Pinned packages"), then review the diff like any change.
# Environment: SKBNF_CACHE (default /var/cache/skbnf), SKBNF_DEBIAN_MIRROR (default: the first
# deb.debian.org-style URI apt uses here, else http://deb.debian.org/debian),
# SKBNF_PACKAGES_LOCK (default: image-packages.lock beside this script).
# Slimmed like the official -slim image: no docs, man pages, locales or apt lists.
set -euo pipefail
LOCK=${SKBNF_PACKAGES_LOCK:-$(cd "$(dirname "$0")" && pwd)/image-packages.lock}

lock_lines() { grep -v '^#' "$LOCK" | grep -v '^$'; }

case "${1:-}" in
pins)
  shift
  [ -r "$LOCK" ] || { echo "base-image: no package lock $LOCK" >&2; exit 1; }
  for p in "$@"; do
    line=$(lock_lines | grep -m1 "^$p=" || true)
    [ -n "$line" ] || {
      echo "base-image: $p is not in $(basename "$LOCK"): add it (build with --build-arg PACKAGES_LOCK=update and take the image's sbom-dpkg.txt)" >&2
      exit 1
    }
    echo "$line"
  done
  exit 0
  ;;
check)
  [ -r "$LOCK" ] || { echo "base-image: no package lock $LOCK" >&2; exit 1; }
  installed=$(dpkg-query -W -f '${Package}=${Version}\n' | LC_ALL=C sort)
  if ! drift=$(diff -u <(lock_lines | LC_ALL=C sort) <(echo "$installed")); then
    {
      echo "base-image: the installed Debian packages differ from $(basename "$LOCK") (- locked, + installed):"
      grep '^[-+][^-+]' <<<"$drift"
      echo "A point release or a changed package list. Review, then refresh the lock: build with --build-arg PACKAGES_LOCK=update and copy the image's /usr/share/doc/skbnf/sbom-dpkg.txt to deploy/image-packages.lock."
    } >&2
    exit 1
  fi
  exit 0
  ;;
"" | --import) ;;
*)
  echo "usage: base-image.sh [--import] | pins PKG... | check" >&2
  exit 2
  ;;
esac

CACHE=${SKBNF_CACHE:-/var/cache/skbnf}
OUT=$CACHE/debian-bookworm-slim.tar
if [ ! -s "$OUT" ]; then
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
  # The base's packages are the image's too: a drift shows here, before a long build.
  # (skipped while refreshing the lock: SKBNF_PACKAGES_LOCK_MODE=update, or an empty lock)
  if [ "${SKBNF_PACKAGES_LOCK_MODE:-check}" = check ] && [ -r "$LOCK" ] && lock_lines >/dev/null; then
    base=$(chroot "$ROOT" dpkg-query -W -f '${Package}=${Version}\n' | LC_ALL=C sort)
    if drifted=$(comm -23 <(echo "$base") <(lock_lines | LC_ALL=C sort)) && [ -n "$drifted" ]; then
      {
        echo "base-image: debootstrap installed packages $(basename "$LOCK") does not pin:"
        sed 's/^/  /' <<<"$drifted"
        echo "(a Debian point release?) Refresh the lock: deploy/base-image.sh's header says how."
      } >&2
      exit 1
    fi
  fi
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
fi
if [ "${1:-}" != --import ]; then
  echo "$OUT"
  exit 0
fi
# The base by digest: the tarball's sha256 is the imported image's layer (diff id).
DOCKER=${DOCKER:-docker}
ref=skbnf-base:sha256-$(sha256sum "$OUT" | cut -d' ' -f1)
if ! $DOCKER image inspect "$ref" >/dev/null 2>&1; then
  $DOCKER import "$OUT" "$ref" >/dev/null
fi
echo "$ref"
