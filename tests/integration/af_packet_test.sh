#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# net_af_packet on a veth pair: creates a network namespace with the pair inside (IPv6 off, so
# only the test's frames cross it), runs the DataplaneTest.AfPacket* tests in it (forwarding
# across the pair; TX full and link down/up), and removes the namespace whatever happens.  Usage: af_packet_test.sh <dataplane_integration_tests>
set -euo pipefail
BIN=$1
NS=skbnf-it-$$
cleanup() { ip netns del "$NS" 2>/dev/null || true; }
trap cleanup EXIT
if ! err=$(ip netns add "$NS" 2>&1); then
  # Only when this environment forbids network namespaces (no CAP_SYS_ADMIN): say so, skip.
  echo "SKIP: cannot create a network namespace here: $err"
  exit 77
fi
ip -n "$NS" link add skbva type veth peer name skbvb
for i in skbva skbvb; do
  ip netns exec "$NS" sysctl -qw net.ipv6.conf.$i.disable_ipv6=1
  ip -n "$NS" link set "$i" up
done
ip netns exec "$NS" env SKBNF_IT_VETH=skbva,skbvb "$BIN" --gtest_filter='*AfPacket*'
