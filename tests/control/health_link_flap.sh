#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A real link flap under skbnfd, for health_test's HealthLinkFlap case (server/control/health.h: a link
# flap changes readiness, never liveness). Creates a network namespace (loopback up, for the
# gRPC listeners) and runs the test inside it against skbnfd forwarding in io mode between
# net_tap (a kernel tap interface, created by the PMD inside the namespace) and net_null; the
# test takes the tap's link down and up with `ip link set`. DPDK's tap PMD re-reads the
# interface's IFF_UP/IFF_RUNNING on every link query (drivers/net/tap/rte_eth_tap.c,
# tap_link_update), so the port's link follows the kernel's. Removes the namespace whatever
# happens.
#   health_link_flap.sh <health_test> [gtest args...]   (SKBNF_CONTROL_DAEMON: skbnfd)
set -euo pipefail
BIN=$1
shift
NS=skbnf-flap-$$
TAP=skbflap$$
TAP=${TAP:0:15}
cleanup() { ip netns del "$NS" 2>/dev/null || true; }
trap cleanup EXIT
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: needs root (a network namespace and a tap interface)"
  exit 77
fi
if ! err=$(ip netns add "$NS" 2>&1); then
  echo "SKIP: cannot create a network namespace here: $err"
  exit 77
fi
if [ ! -c /dev/net/tun ]; then
  echo "SKIP: no /dev/net/tun (net_tap needs it)"
  exit 77
fi
ip -n "$NS" link set lo up
eal="--no-huge -m 512 --no-pci --no-shconf --file-prefix=skbnf-flap-$$ -l 0,1"
eal="$eal --vdev=net_tap0,iface=$TAP --vdev=net_null0"
ip netns exec "$NS" env \
  SKBNF_CONTROL_DAEMON_LINK_ARGS="--mode=io -- $eal" \
  SKBNF_CONTROL_LINK_DOWN="ip link set $TAP down" \
  SKBNF_CONTROL_LINK_UP="ip link set $TAP up" \
  "$BIN" "$@"
