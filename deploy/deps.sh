#!/usr/bin/env bash
# Installs the Debian 12 packages skbnf needs to build, test, benchmark and demo, when missing.
# Idempotent: does nothing (and needs no network) when everything is installed.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config git
  dpdk dpdk-dev libdpdk-dev libpcap-dev
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  prometheus-cpp-dev prometheus
  python3-grpcio python3-protobuf
  openssl iproute2 curl jq valgrind
)
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

# Benchmarks (bench/run, issue 10): the plots (matplotlib for /usr/bin/python3), and the
# allocators experiment 6 compares, loaded with LD_PRELOAD (runtime libraries are enough).
BENCH_PKGS=(python3-matplotlib libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0)
missing=()
for p in "${BENCH_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
