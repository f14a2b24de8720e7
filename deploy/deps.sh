#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the Debian 12 packages skbnf needs to build, test, benchmark and demo, when missing.
# Idempotent: does nothing (and needs no network) when everything is installed.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config git ccache
  dpdk dpdk-dev libdpdk-dev libpcap-dev
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  prometheus-cpp-dev prometheus
  python3-grpcio python3-protobuf
  openssl iproute2 curl jq valgrind
  # capture tests (integration.capture_dumpcap): the pcapng file read back with tcpdump -r
  tcpdump
  # Open vSwitch with DPDK: the vhost-user peer of integration.ovs_dpdk and the fault tests
  openvswitch-switch-dpdk
  # deploy tests (tests/deploy): rules, dashboard renderer, container image
  python3-yaml python3-matplotlib nodejs docker.io debootstrap
  # fuzzing (tests/fuzz): clang 14; the libFuzzer/ASan/UBSan runtimes are in libclang-rt-14-dev
  clang-14 libclang-rt-14-dev
  # the function-size stage (tests/function_size/check.sh)
  clang-tidy-14
  # benchmarks (bench/run): the allocators experiment 6 loads with LD_PRELOAD
  libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0
)
# npm: its own Debian package, unless the installed nodejs ships it (NodeSource's does).
command -v npm >/dev/null || PKGS+=(npm)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm packages of the deploy tests (helm, tsc + @grafana/schema, kubernetes-models), pinned by
# deploy/tools/package-lock.json, installed into a cache directory outside the repository
# (SKBNF_NODE_DIR, default /var/cache/skbnf/node). Reinstalled only when the lock file changes.
NODE_DIR=${SKBNF_NODE_DIR:-/var/cache/skbnf/node}
TOOLS=$(cd "$(dirname "$0")" && pwd)/tools
stamp=$(cat "$TOOLS/package.json" "$TOOLS/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$NODE_DIR/.skbnf-stamp" 2>/dev/null)" != "$stamp" ] || [ ! -x "$NODE_DIR/node_modules/.bin/helm" ]; then
  echo "deps: installing npm packages into $NODE_DIR"
  mkdir -p "$NODE_DIR"
  cp "$TOOLS/package.json" "$TOOLS/package-lock.json" "$NODE_DIR/"
  (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$stamp" >"$NODE_DIR/.skbnf-stamp"
fi
