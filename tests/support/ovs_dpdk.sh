# SPDX-License-Identifier: BSD-3-Clause
# Open vSwitch with DPDK as skbnfd's vhost-user peer, for tests/integration/ovs_dpdk_test.sh and
# bench/ovs_soak.sh (sourced; bash). Debian's openvswitch-switch-dpdk 3.1 with its own rundir,
# database and logs under $T, DPDK on (`dpdk-init=true`, its own --file-prefix,
# --single-file-segments), its PMD thread on CPU 0; a netdev bridge br0 with two
# dpdkvhostuserclient ports (vhu0, vhu1: skbnfd's net_virtio_user with server=1 listens on
# $T/vhu0.sock and $T/vhu1.sock) and two internal ports for the kernel side ($SI, $SO); OpenFlow:
# $SI -> vhu0 (into skbnfd), vhu1 -> $SO (out of skbnfd).
# The caller sets T (a scratch directory), SI and SO (port names, <= 15 characters); then
# ovs_env, ovs_start FILE_PREFIX [extra Interface settings for vhu0 ...], and ovs_stop on every
# exit path (idempotent; safe before ovs_start).
OVS_VSWITCHD=${OVS_VSWITCHD:-/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk}

ovs_env() {
  export OVS_RUNDIR=$T OVS_DBDIR=$T OVS_LOGDIR=$T OVS_SYSCONFDIR=$T
  VSCTL=(ovs-vsctl --db=unix:$T/db.sock --timeout=20)
  OF=unix:$T/br0.mgmt
}

ovs_stop() {
  if [ -S "$T/db.sock" ]; then "${VSCTL[@]}" --if-exists del-br br0 2>/dev/null || true; fi
  local p
  for p in ovs-vswitchd ovsdb-server; do
    [ -f "$T/$p.pid" ] && kill "$(cat "$T/$p.pid")" 2>/dev/null || true
  done
  for _ in $(seq 50); do pgrep -F "$T/ovs-vswitchd.pid" >/dev/null 2>&1 || break; sleep 0.1; done
  ip link del "$SI" 2>/dev/null || true
  ip link del "$SO" 2>/dev/null || true
}

ovs_start() {
  local prefix=$1
  shift
  ovsdb-tool create "$T/conf.db" /usr/share/openvswitch/vswitch.ovsschema
  ovsdb-server "$T/conf.db" --remote="punix:$T/db.sock" --pidfile="$T/ovsdb-server.pid" \
    --detach --log-file="$T/ovsdb-server.log"
  "${VSCTL[@]}" --no-wait init
  "${VSCTL[@]}" --no-wait set Open_vSwitch . other_config:dpdk-init=true \
    "other_config:dpdk-extra=--no-pci --single-file-segments --file-prefix=$prefix" \
    other_config:pmd-cpu-mask=0x1
  "$OVS_VSWITCHD" "unix:$T/db.sock" --pidfile="$T/ovs-vswitchd.pid" --detach \
    --log-file="$T/ovs-vswitchd.log"
  "${VSCTL[@]}" add-br br0 -- set bridge br0 datapath_type=netdev \
    -- add-port br0 vhu0 -- set Interface vhu0 type=dpdkvhostuserclient \
       "options:vhost-server-path=$T/vhu0.sock" "$@" \
    -- add-port br0 vhu1 -- set Interface vhu1 type=dpdkvhostuserclient \
       "options:vhost-server-path=$T/vhu1.sock" \
    -- add-port br0 "$SI" -- set Interface "$SI" type=internal \
    -- add-port br0 "$SO" -- set Interface "$SO" type=internal
  ovs_links_and_flows
}

# The kernel side up (IPv6 off) and the two OpenFlow flows: after ovs_start, and again after an
# ovs-vswitchd restart, which keeps the database (ports) but not the flows.
ovs_links_and_flows() {
  local i
  for i in "$SI" "$SO"; do
    sysctl -qw "net.ipv6.conf.$i.disable_ipv6=1"
    ip link set "$i" up
  done
  ovs-ofctl del-flows "$OF"
  ovs-ofctl add-flow "$OF" "in_port=$SI,actions=output:vhu0"
  ovs-ofctl add-flow "$OF" "in_port=vhu1,actions=output:$SO"
}
