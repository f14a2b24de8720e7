# SPDX-License-Identifier: BSD-3-Clause
# af_xdp_veth.sh, sourced by the AF_XDP tests (tests/integration/af_xdp_test.sh,
# af_xdp_flap_test.sh, af_xdp_pool_needs_test.sh, small_pool_test.sh): the kernel side of a
# net_af_xdp port, veth pairs in a network namespace of the test's own (copy mode: veth has no
# zero-copy). The caller sets NS and removes the namespace in its cleanup (`ip netns del "$NS"`).
#   xdp_netns            creates $NS with its loopback up (skbnfctl reaches skbnfd on
#                        127.0.0.1 inside it), or exits 77 saying why (no namespaces here)
#   in_ns CMD...         runs CMD in $NS
#   veth_pair A B...     veth pairs A<->B (each argument "a b", or two names), IPv6 off (no
#                        router solicitations or DAD frames in the counts), both ends up
#   mac IF               the interface's MAC
xdp_netns() {
  local err
  if ! err=$(ip netns add "$NS" 2>&1); then
    echo "SKIP: cannot create a network namespace here: $err"
    exit 77
  fi
  ip -n "$NS" link set lo up
}
in_ns() { ip netns exec "$NS" "$@"; }
veth_pair() {
  if [ $# -eq 2 ] && [ "${1#* }" = "$1" ]; then set -- "$1 $2"; fi
  local p a b i
  for p in "$@"; do
    read -r a b <<<"$p"
    ip -n "$NS" link add "$a" type veth peer name "$b"
    for i in "$a" "$b"; do
      in_ns sysctl -qw "net.ipv6.conf.$i.disable_ipv6=1"
      ip -n "$NS" link set "$i" up
    done
  done
}
mac() {
  ip -n "$NS" -j link show "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["address"])'
}
