#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# deploy.docker: the container image, built and run by a Docker daemon of the test's own.
#
#  1. starts dockerd (own --data-root /var/lib/skbnf-docker, kept between runs so layers are
#     cached; own --exec-root and socket under /run; --iptables=false --bridge=none);
#  2. the base by digest: deploy/base-image.sh --import makes (debootstrap, cached in
#     /var/cache/skbnf) and imports the base, named skbnf-base:sha256-<the tarball's sha256>;
#     a base given by tag is refused by the build;
#     the packages are pinned: deploy/image-packages.lock is the image's whole package set
#     (the build installs those versions and fails on any difference);
#  3. builds deploy/Dockerfile's runtime stage with BuildKit, --network host. By default
#     ARTIFACTS=prebuilt: the binaries the suite just built (same Debian 12 ABI) go in, so the
#     code is not compiled twice; SKBNF_DOCKER_FULL=1 builds the whole multi-stage file from
#     the repository instead (compiles inside the build stage; slow on a cold cache);
#     The commit goes in (GIT_COMMIT for the full build), the base image's id, and a second,
#     cached pass adds the SBOM label; the labels, the SBOM file (dpkg-query of the image, the
#     base), LICENSE and the PMDs (ixgbe, bnxt, virtio, vhost, af_xdp, memif, ...: present and
#     every library they need resolved) are checked;
#  4. runs the image with no arguments (the demo, as user skbnf, no network but its own
#     loopback): /metrics shows forwarding, `skbnfctl strategy set` swaps the strategy inside
#     it, the HEALTHCHECK (skbnf_health over grpc.health.v1) reports healthy, skbnf_build_info
#     names the commit; then `skbnfd --preflight` in the image with the SR-IOV device plugin's
#     PCIDEVICE_<RES> and PCIDEVICE_<RES>_INFO, IPC_LOCK and an 8 MiB memlock limit on a fake
#     node: passes, and without the device fails on the device, not on the environment;
#  4a. deploy/compose.yaml's skbnfd command and environment: HEALTHCHECK healthy over the
#     control socket ($SKBNF_ADDR), `exec skbnfctl` swaps over it, nothing on loopback TCP;
#  5. the SR-IOV wiring as close as this machine allows: one end of each of two veth pairs is
#     moved into a second container's network namespace (what Multus does with a VF or a
#     host-device), skbnfd inside forwards l3 between them with net_af_packet (root, every
#     capability dropped but NET_RAW, NET_ADMIN (the PMD sets promiscuous mode and the MAC at
#     start) and IPC_LOCK, as the Helm chart's afPacket mode runs it), frames sent
#     from the host end of one pair arrive at the host end of the other with TTL - 1, a valid
#     header checksum, the output port's source MAC and the route's next-hop MAC.
# Exit 77 (ctest: skipped) with the reason when dockerd or namespaces cannot start here.
# Environment: SKBNFD, SKBNFCTL, SKBNF_HEALTH, SKBNF_MEMPOOL_PLUGIN (ctest sets them).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DOCKER=/usr/bin/docker # another client may sit first on PATH
DATA=${SKBNF_DOCKER_DATA:-/var/lib/skbnf-docker}
RUN=/run/skbnf-dk-$$
IMAGE=skbnf:deploy-test
T0=$(date +%s.%N)
phase() { awk -v t0="$T0" -v t="$(date +%s.%N)" -v m="$*" 'BEGIN { printf "[%6.1f s] %s\n", t - t0, m }'; }
skip() {
  echo "SKIPPED: $*"
  exit 77
}
fail() {
  echo "FAIL: $*"
  exit 1
}

trap 'echo "FAIL: line $LINENO: $BASH_COMMAND"' ERR
[ "$(id -u)" -eq 0 ] || skip "needs root to start its own dockerd"
command -v dockerd >/dev/null || skip "dockerd missing (deploy/deps.sh installs docker.io)"
[ -x "$DOCKER" ] || skip "$DOCKER missing (docker.io)"
for v in SKBNFD SKBNFCTL SKBNF_HEALTH SKBNF_MEMPOOL_PLUGIN; do
  [ -x "${!v:-}" ] || [ -f "${!v:-}" ] || fail "$v is not a built file: '${!v:-}'"
done

# One test at a time per data root (two dockerds cannot share it).
mkdir -p "$DATA"
exec 9>"$DATA.lock"
flock -w 900 9 || fail "another docker test holds $DATA.lock"

CTX=$(mktemp -d /tmp/skbnf-docker-ctx.XXXXXX)
NS=skbnf-dk-$$
DOCKERD_PID=
cleanup() {
  set +e
  if [ -S "$RUN/docker.sock" ]; then
    $DOCKER -H "unix://$RUN/docker.sock" rm -f "skbnf-demo-$$" "skbnf-l3-$$" "skbnf-compose-$$" >/dev/null 2>&1
  fi
  ip netns del "$NS" 2>/dev/null
  if [ -n "$DOCKERD_PID" ]; then
    kill "$DOCKERD_PID" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$DOCKERD_PID" 2>/dev/null
  fi
  rm -rf "$CTX" "$RUN"
}
trap cleanup EXIT

# 1. dockerd
mkdir -p "$RUN"
dockerd --data-root "$DATA" --exec-root "$RUN/exec" --host "unix://$RUN/docker.sock" \
  --pidfile "$RUN/docker.pid" --iptables=false --ip6tables=false --bridge=none \
  --ip-masq=false --ip-forward=false >"$RUN/dockerd.log" 2>&1 &
DOCKERD_PID=$!
export DOCKER_HOST=unix://$RUN/docker.sock
up=0
for _ in $(seq 300); do
  if $DOCKER info >/dev/null 2>&1; then
    up=1
    break
  fi
  kill -0 "$DOCKERD_PID" 2>/dev/null || break
  sleep 0.2
done
if [ $up -ne 1 ]; then
  tail -5 "$RUN/dockerd.log" | sed 's/^/  dockerd: /'
  skip "dockerd could not start here (see its log above)"
fi
phase "dockerd up ($($DOCKER info -f '{{.ServerVersion}} {{.Driver}}'))"

# 2. base image, by digest
BASE=$(DOCKER=$DOCKER bash "$ROOT/deploy/base-image.sh" --import) || fail "deploy/base-image.sh --import"
LAYER=sha256:${BASE#skbnf-base:sha256-}
[ "$($DOCKER image inspect -f '{{json .RootFS.Layers}}' "$BASE")" = "[\"$LAYER\"]" ] ||
  fail "$BASE: its layer is not the tarball's digest $LAYER"
phase "base $BASE (its one layer: the debootstrap tarball's sha256)"

# 3. image: the commit (GIT_COMMIT for the full build, whose context has no .git; REVISION for
# the OCI label), the base image's id, then a second, cached pass that adds the SBOM label from
# the SBOM file the first pass wrote (a label cannot be computed inside a build).
COMMIT=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
BASE_ID=$($DOCKER image inspect -f '{{.Id}}' "$BASE")
build_args=(--network host --build-arg REVISION="$COMMIT" --build-arg BASE="$BASE"
  --build-arg BASE_ID="$BASE_ID" --build-arg PACKAGES_LOCK="${SKBNF_PACKAGES_LOCK_MODE:-check}")
if [ "${SKBNF_DOCKER_FULL:-0}" = 1 ]; then
  build_args+=(-f "$ROOT/deploy/Dockerfile" --build-arg JOBS="${SKBNF_JOBS:-2}"
    --build-arg GIT_COMMIT="$(git -C "$ROOT" rev-parse HEAD)" "$ROOT")
else
  mkdir -p "$CTX/prebuilt/bin" "$CTX/prebuilt/lib/skbnf" "$CTX/prebuilt/share/doc/skbnf"
  install -s -m 0755 "$SKBNFD" "$SKBNFCTL" "$SKBNF_HEALTH" "$CTX/prebuilt/bin/"
  install -s -m 0644 "$SKBNF_MEMPOOL_PLUGIN" "$CTX/prebuilt/lib/skbnf/"
  install -m 0644 "$ROOT/LICENSE" "$CTX/prebuilt/share/doc/skbnf/"
  cp "$ROOT/deploy/Dockerfile" "$CTX/Dockerfile"
  mkdir -p "$CTX/deploy"
  cp "$ROOT/deploy/base-image.sh" "$ROOT/deploy/image-packages.lock" "$CTX/deploy/"
  build_args+=(--build-arg ARTIFACTS=prebuilt "$CTX")
fi
DOCKER_BUILDKIT=1 $DOCKER build -t "$IMAGE" "${build_args[@]}" >"$RUN/build.log" 2>&1 ||
  { tail -40 "$RUN/build.log"; fail "docker build${SKBNF_DOCKER_FULL:+ (full)}"; }
SBOM=$($DOCKER run --rm --network none --entrypoint cat "$IMAGE" /usr/share/doc/skbnf/sbom-dpkg.txt)
DOCKER_BUILDKIT=1 $DOCKER build -t "$IMAGE" --build-arg SBOM_DPKG="$(tr '\n' ' ' <<<"$SBOM" | sed 's/ $//')" \
  "${build_args[@]}" >>"$RUN/build.log" 2>&1 || { tail -40 "$RUN/build.log"; fail "docker build (SBOM label)"; }
phase "built $IMAGE ($($DOCKER image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
[ "$($DOCKER image inspect -f '{{.Config.User}}' "$IMAGE")" = "10001:10001" ] || fail "image user"
[ "$($DOCKER image inspect -f '{{index .Config.Entrypoint 0}}' "$IMAGE")" = skbnfd ] || fail "entrypoint"
ports=$($DOCKER image inspect -f '{{json .Config.ExposedPorts}}' "$IMAGE")
for p in 50051/tcp 9478/tcp; do
  [[ $ports == *"\"$p\""* ]] || fail "port $p not exposed: $ports"
done
label() { $DOCKER image inspect -f "{{index .Config.Labels \"$1\"}}" "$IMAGE"; }
[ "$(label org.opencontainers.image.revision)" = "$COMMIT" ] || fail "revision label: $(label org.opencontainers.image.revision)"
[ "$(label org.opencontainers.image.licenses)" = BSD-3-Clause ] || fail "licenses label"
[ "$(label org.opencontainers.image.base.digest)" = "$BASE_ID" ] || fail "base.digest label: $(label org.opencontainers.image.base.digest) != $BASE_ID"
[ "$(label org.opencontainers.image.base.name)" = "$BASE" ] || fail "base.name label: $(label org.opencontainers.image.base.name) != $BASE"
# built on exactly the base: its layer is the image's first
[ "$($DOCKER image inspect -f '{{index .RootFS.Layers 0}}' "$IMAGE")" = "$LAYER" ] ||
  fail "the image's first layer is not the base's $LAYER"
# the packages are the lock's, line for line (the build's own check, seen from outside).
# SKBNF_PACKAGES_LOCK_MODE=update (refreshing the lock, deploy/base-image.sh): the build took
# the archive's current versions; write them to the lock for review.
if [ "${SKBNF_PACKAGES_LOCK_MODE:-check}" = update ]; then
  { grep '^#' "$ROOT/deploy/image-packages.lock"; echo "$SBOM"; } >"$RUN/lock.new"
  cp "$RUN/lock.new" "$ROOT/deploy/image-packages.lock"
  phase "wrote deploy/image-packages.lock ($(wc -l <<<"$SBOM") packages)"
else
  diff <(grep -v '^#' "$ROOT/deploy/image-packages.lock" | grep -v '^$') - <<<"$SBOM" >"$RUN/lock.diff" ||
    { cat "$RUN/lock.diff"; fail "the image's packages differ from deploy/image-packages.lock"; }
fi
# SBOM: every Debian package with its version, as a file (with the base) and as a label
[ "$(label io.skbnf.sbom.dpkg)" = "$(tr '\n' ' ' <<<"$SBOM" | sed 's/ $//')" ] || fail "SBOM label differs from the file"
npkg=$(wc -l <<<"$SBOM")
[ "$npkg" -ge 80 ] || fail "SBOM lists only $npkg packages"
$DOCKER run --rm --network none --entrypoint /bin/sh "$IMAGE" -c '
  set -e
  dpkg-query -W -f "\${Package}=\${Version}\n" | LC_ALL=C sort | cmp - /usr/share/doc/skbnf/sbom-dpkg.txt
  grep -q "^# base: skbnf-base:sha256-[0-9a-f]\{64\} sha256:" /usr/share/doc/skbnf/sbom-dpkg.tsv
  grep -q "^librte-net-ixgbe23	" /usr/share/doc/skbnf/sbom-dpkg.tsv
  grep -q "BSD 3-Clause" /usr/share/doc/skbnf/LICENSE' || fail "SBOM file, base or LICENSE in the image"
# PMDs for 82599/X5xx (ixgbe) and Broadcom (bnxt) VFs, virtio, vhost, AF_XDP, memif: shipped
# and loadable (EAL dlopens every PMD in its plugin directory at start: one unresolved
# library would stop every start, the demo's below included).
$DOCKER run --rm --network none --entrypoint /bin/sh "$IMAGE" -c '
  set -e
  d=$(dirname "$(ls /usr/lib/*/dpdk/pmds-23.0/librte_net_null.so* | head -1)")
  for p in ixgbe bnxt virtio vhost af_xdp memif iavf ice i40e mlx5 af_packet; do
    ls "$d"/librte_net_$p.so* >/dev/null || { echo "no PMD net_$p in $d"; exit 1; }
  done
  if ldd "$d"/*.so* | grep "not found"; then exit 1; fi' || fail "PMDs missing or unloadable"
phase "labels (revision $COMMIT, base $BASE_ID, BSD-3-Clause), SBOM of $npkg packages, PMDs present"
[[ $($DOCKER image inspect -f '{{json .Config.Healthcheck}}' "$IMAGE") == *skbnf_health* ]] ||
  fail "no HEALTHCHECK with skbnf_health"
$DOCKER run --rm --network none --entrypoint /bin/sh "$IMAGE" -c \
  'for t in cc c++ cmake ninja protoc; do command -v $t && exit 1; done; test -f /usr/local/lib/skbnf/libskbnf_mempool.so' ||
  fail "runtime image carries build tools or misses the mempool plugin"

# 4. the demo: no arguments
$DOCKER run -d --name "skbnf-demo-$$" --network none --health-interval=1s \
  --health-start-period=30s "$IMAGE" >/dev/null
PID=$($DOCKER inspect -f '{{.State.Pid}}' "skbnf-demo-$$")
metrics() { nsenter -t "$1" -n curl -sf --max-time 5 "http://127.0.0.1:9478/metrics"; }
rx_total() { { metrics "$1" || true; } | awk '/^skbnf_port_packets_total\{.*direction="rx"/ {s += $2} END {print s + 0}'; }
ok=0
for _ in $(seq 150); do
  if [ "$(rx_total "$PID")" != 0 ]; then ok=1; break; fi
  sleep 0.2
done
[ $ok = 1 ] || { $DOCKER logs "skbnf-demo-$$" 2>&1 | tail -20; fail "demo: no RX packets in /metrics"; }
# moving: a later scrape counts more (waited for, bounded; not one sleep and a hope)
a=$(rx_total "$PID"); b=$a
for _ in $(seq 150); do
  b=$(rx_total "$PID"); [ "$b" -gt "$a" ] && break
  sleep 0.2
done
[ "$b" -gt "$a" ] || fail "demo: RX counter not moving in 30 s ($a -> $b)"
m=$(metrics "$PID")
grep -q '^skbnf_strategy_info{spec="magazine"} 1' <<<"$m" || fail "demo: strategy not magazine"
# the commit the binary was built from: HEAD for the full build (the context has no .git), the
# build tree's configure-time commit for prebuilt binaries; never "unknown"
built=$(sed -n 's/^skbnf_build_info{.*git_commit="\([^"]*\)".*/\1/p' <<<"$m")
[ -n "$built" ] && [ "$built" != unknown ] || fail "skbnf_build_info git_commit='$built'"
if [ "${SKBNF_DOCKER_FULL:-0}" = 1 ]; then
  [ "$built" = "$COMMIT" ] || fail "skbnf_build_info git_commit $built, HEAD is $COMMIT"
else
  git -C "$ROOT" cat-file -e "$built^{commit}" || fail "skbnf_build_info git_commit $built is no commit here"
fi
phase "demo forwards: rx $a -> $b packets in 1 s (build_info git_commit $built)"
$DOCKER exec "skbnf-demo-$$" skbnfctl strategy set recycle+headpool >"$RUN/swap.txt" ||
  { cat "$RUN/swap.txt"; fail "skbnfctl strategy set in the container"; }
grep -q ' ok ' "$RUN/swap.txt" || { cat "$RUN/swap.txt"; fail "swap not ok"; }
m=$(metrics "$PID")
grep -q '^skbnf_strategy_info{spec="recycle+headpool"} 1' <<<"$m" ||
  fail "/metrics does not show the swapped strategy"
grep -q '^skbnf_strategy_swaps_total{result="ok"} 1' <<<"$m" || fail "swap not counted"
health=
for _ in $(seq 100); do
  health=$($DOCKER inspect -f '{{.State.Health.Status}}' "skbnf-demo-$$")
  [ "$health" = healthy ] && break
  sleep 0.2
done
[ "$health" = healthy ] || fail "HEALTHCHECK: $health"
[ "$($DOCKER exec "skbnf-demo-$$" id -u)" = 10001 ] || fail "demo does not run as uid 10001"
$DOCKER stop -t 20 "skbnf-demo-$$" >/dev/null
log=$($DOCKER logs "skbnf-demo-$$" 2>&1)
grep -q 'audit OK' <<<"$log" || { tail <<<"$log"; fail "no clean audit at stop"; }
$DOCKER rm "skbnf-demo-$$" >/dev/null
phase "demo: skbnfctl swapped magazine -> recycle+headpool, healthy, audit OK at stop"

# 4a. deploy/compose.yaml's skbnfd service (its command and environment, read from the file):
# the control API on a unix socket, `exec skbnfctl` (the image's uid, skbnfd's own: admin)
# swaps over it, the loopback TCP listener is gone, HEALTHCHECK follows SKBNF_ADDR.
mapfile -t compose_args < <(/usr/bin/python3 -c 'import sys, yaml
s = yaml.safe_load(open(sys.argv[1]))["services"]["skbnfd"]
print("\n".join(s["command"]))' "$ROOT/deploy/compose.yaml")
compose_env=$(/usr/bin/python3 -c 'import sys, yaml
s = yaml.safe_load(open(sys.argv[1]))["services"]["skbnfd"]
print(" ".join("%s=%s" % kv for kv in s["environment"].items()))' "$ROOT/deploy/compose.yaml")
env_args=()
for kv in $compose_env; do env_args+=(-e "$kv"); done
$DOCKER run -d --name "skbnf-compose-$$" --network none --health-interval=1s \
  --health-start-period=30s "${env_args[@]}" "$IMAGE" "${compose_args[@]}" >/dev/null
health=
for _ in $(seq 150); do
  health=$($DOCKER inspect -f '{{.State.Health.Status}}' "skbnf-compose-$$")
  [ "$health" = healthy ] && break
  sleep 0.2
done
[ "$health" = healthy ] || { $DOCKER logs "skbnf-compose-$$" 2>&1 | tail; fail "compose's skbnfd: HEALTHCHECK $health"; }
$DOCKER exec "skbnf-compose-$$" skbnfctl strategy set recycle+headpool >"$RUN/swap.txt" 2>&1 ||
  { cat "$RUN/swap.txt"; fail "compose's skbnfd: exec skbnfctl over the socket"; }
if $DOCKER exec "skbnf-compose-$$" skbnfctl --addr=127.0.0.1:50051 info >"$RUN/lo.txt" 2>&1; then
  fail "compose's skbnfd answers on loopback TCP"
fi
$DOCKER rm -f "skbnf-compose-$$" >/dev/null
phase "compose's skbnfd (${compose_args[*]}): healthy over \$SKBNF_ADDR, exec skbnfctl swaps over the socket, nothing on loopback TCP"

# 4b. preflight in the image as on a current SR-IOV node: the device plugin's two variables,
# PCIDEVICE_<RES>=<addr> and PCIDEVICE_<RES>_INFO=<device-info JSON>, in the shape
# k8snetworkplumbingwg/sriov-network-device-plugin writes them (pkg/resources/pool_stub.go
# GetEnvs: the _INFO key is PCIDEVICE_<prefix>_<resource>_INFO, upper case, dots to
# underscores; the value json.Marshal of map[pci address]map[info provider name]map[string]
# string; pkg/infoprovider/genericInfoProvider.go: "generic" {"deviceID": <addr>};
# vfioInfoProvider.go: "vfio" {"mount": "/dev/vfio/vfio", "dev-mount": "/dev/vfio/<group>"}),
# root with every capability dropped but IPC_LOCK and Docker's 8 MiB memlock limit (what the
# chart gives: with IPC_LOCK the limit does not apply), on a fake node (sysfs, procfs, /dev,
# cgroup) through --test-preflight-root.
VF=0000:3b:02.0
RES=PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK
INFO='{"0000:3b:02.0":{"generic":{"deviceID":"0000:3b:02.0"},"vfio":{"dev-mount":"/dev/vfio/71","mount":"/dev/vfio/vfio"}}}'
NODE=$CTX/node
fake() { mkdir -p "$(dirname "$NODE$1")"; printf "%b" "${2:-}" >"$NODE$1"; }
fake /proc/self/cgroup '0::/kubepods/pod1/ctr\n'
fake /sys/fs/cgroup/kubepods/pod1/ctr/cpuset.cpus.effective '0-1\n'
fake /sys/devices/system/cpu/cpu0/node0/.keep
fake /sys/devices/system/cpu/cpu1/node0/.keep
fake /proc/meminfo 'MemTotal: 16384000 kB\nHugepagesize:       2048 kB\n'
fake /proc/mounts 'proc /proc proc rw 0 0\nnodev /hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n'
fake /sys/devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages '512\n'
fake /dev/vfio/vfio
fake /dev/vfio/71
# The capabilities are the real ones: preflight reads <root>/proc/self/status (CapEff), which
# points at the container process's own.
ln -s /proc/self/status "$NODE/proc/self/status"
preflight() {
  $DOCKER run --rm --network none --user 0:0 --cap-drop ALL ${PF_CAPS---cap-add IPC_LOCK} \
    --ulimit memlock=8388608:8388608 -e "$RES=$VF" -e "${RES}_INFO=$INFO" -v "$NODE:/node" \
    "$IMAGE" --preflight --pcidevice-env --mode=l3 --test-preflight-root=/node \
    -- --in-memory --huge-dir=/hugepages
}
# no such device: the VF is not on this (fake) node; the failure must be about the device
rc=0; preflight >"$RUN/preflight-nodev.txt" 2>&1 || rc=$?
[ $rc = 1 ] || { cat "$RUN/preflight-nodev.txt"; fail "preflight without the device: exit $rc, want 1"; }
if grep -E '^error' "$RUN/preflight-nodev.txt" | grep -qiE '_INFO|not a PCI address|json'; then
  cat "$RUN/preflight-nodev.txt"; fail "preflight: the environment parser refused the device plugin's variables"
fi
grep -E '^error' "$RUN/preflight-nodev.txt" | grep -q "$VF" ||
  { cat "$RUN/preflight-nodev.txt"; fail "preflight without the device: no error naming $VF"; }
# the VF bound to vfio-pci with its IOMMU group's device node: preflight passes
D=/sys/bus/pci/devices/$VF
fake $D/numa_node '0\n'
ln -s ../../../bus/pci/drivers/vfio-pci "$NODE$D/driver"
ln -s ../../../kernel/iommu_groups/71 "$NODE$D/iommu_group"
rc=0; preflight >"$RUN/preflight.txt" 2>&1 || rc=$?
[ $rc = 0 ] && grep -q 'preflight: 0 error(s)' "$RUN/preflight.txt" ||
  { cat "$RUN/preflight.txt"; fail "preflight in the image with IPC_LOCK and an 8 MiB memlock: exit $rc"; }
grep -qE "^ok +vf_driver +$VF bound to vfio-pci" "$RUN/preflight.txt" ||
  { cat "$RUN/preflight.txt"; fail "preflight did not check the VF's driver"; }
grep -qE '^ok +memlock +CAP_IPC_LOCK' "$RUN/preflight.txt" ||
  { cat "$RUN/preflight.txt"; fail "memlock not cleared by the container's IPC_LOCK"; }
# control: the same container without IPC_LOCK is refused on memlock (8 MiB < the pool)
rc=0; PF_CAPS= preflight >"$RUN/preflight-nocap.txt" 2>&1 || rc=$?
[ $rc = 1 ] && grep -qE '^error +memlock' "$RUN/preflight-nocap.txt" ||
  { cat "$RUN/preflight-nocap.txt"; fail "preflight without IPC_LOCK: exit $rc, no memlock error"; }
phase "preflight in the image: PCIDEVICE_* + _INFO (device plugin shape), IPC_LOCK, memlock 8 MiB: ok; without the device: the device check fails"

# 5. l3 between two veth pairs moved into the container (the Multus/VF wiring)
if ! ip netns add "$NS" 2>"$RUN/netns.err"; then
  skip "cannot create a network namespace: $(cat "$RUN/netns.err")"
fi
# Negative control: frames that merely cross a veth pair (no skbnfd: TTL and MACs unchanged)
# must fail the same check.
ip -n "$NS" link add xa type veth peer name xb
for i in xa xb; do
  ip netns exec "$NS" sysctl -qw "net.ipv6.conf.$i.disable_ipv6=1"
  ip -n "$NS" link set "$i" up
done
if ip netns exec "$NS" /usr/bin/python3 "$ROOT/tests/deploy/veth_traffic.py" --send xa --recv xb \
  --count 20 --dst-mac 02:00:00:5e:00:01 --expect-src-mac 02:00:00:5e:00:02 \
  --expect-dst-mac 02:00:00:5e:00:b0 --ttl 64 --timeout 2 >"$RUN/negative.txt" 2>&1; then
  cat "$RUN/negative.txt"
  fail "the traffic check accepted frames skbnfd never forwarded"
fi
grep -q "ttl 64" "$RUN/negative.txt" || { cat "$RUN/negative.txt"; fail "negative control: no TTL complaint"; }
ip -n "$NS" link del xa
cat >"$CTX/skbnfd.conf" <<'EOF'
mode l3
strategy recycle+magazine
eal -l 0,1 --no-huge -m 256 --no-pci --no-shconf
eal --vdev=net_af_packet0,iface=vf0 --vdev=net_af_packet1,iface=vf1
port net_af_packet0 peer=net_af_packet1
port net_af_packet1 peer=net_af_packet0
route 198.18.0.0/15 net_af_packet1 02:00:00:5e:00:b0
EOF
chmod 0644 "$CTX/skbnfd.conf"
$DOCKER run -d --name "skbnf-l3-$$" --network none --user 0:0 --cap-drop ALL \
  --cap-add NET_RAW --cap-add NET_ADMIN --cap-add IPC_LOCK -v "$CTX/skbnfd.conf:/etc/skbnf/skbnfd.conf:ro" \
  --entrypoint /bin/sh "$IMAGE" -c \
  'until [ -e /tmp/links-ready ]; do sleep 0.1; done; exec skbnfd --config=/etc/skbnf/skbnfd.conf --stats=0' \
  >/dev/null
PID=$($DOCKER inspect -f '{{.State.Pid}}' "skbnf-l3-$$")
ip link add name ha netns "$NS" address 02:00:00:5e:00:a0 type veth peer name vf0 netns "$PID"
ip link add name hb netns "$NS" address 02:00:00:5e:00:b0 type veth peer name vf1 netns "$PID"
for i in ha hb; do
  ip netns exec "$NS" sysctl -qw "net.ipv6.conf.$i.disable_ipv6=1"
  ip -n "$NS" link set "$i" up
done
for i in vf0 vf1; do
  nsenter -t "$PID" -n sysctl -qw "net.ipv6.conf.$i.disable_ipv6=1"
  nsenter -t "$PID" -n ip link set "$i" up
done
VF0_MAC=$(nsenter -t "$PID" -n ip -br link show vf0 | awk '{print $3}')
VF1_MAC=$(nsenter -t "$PID" -n ip -br link show vf1 | awk '{print $3}')
$DOCKER exec "skbnf-l3-$$" touch /tmp/links-ready
ok=0
for _ in $(seq 150); do
  if nsenter -t "$PID" -n "$SKBNF_HEALTH" --addr=127.0.0.1:50051 >/dev/null 2>&1; then ok=1; break; fi
  [ "$($DOCKER inspect -f '{{.State.Running}}' "skbnf-l3-$$")" = true ] || break
  sleep 0.2
done
[ $ok = 1 ] || { $DOCKER logs "skbnf-l3-$$" 2>&1 | tail -20; fail "l3: skbnfd on the moved veths not SERVING"; }
phase "l3: skbnfd in the container forwards between vf0 ($VF0_MAC) and vf1 ($VF1_MAC)"
N=200
ip netns exec "$NS" /usr/bin/python3 "$ROOT/tests/deploy/veth_traffic.py" --send ha --recv hb \
  --count "$N" --dst-mac "$VF0_MAC" --expect-src-mac "$VF1_MAC" \
  --expect-dst-mac 02:00:00:5e:00:b0 --ttl 64 ||
  { $DOCKER logs "skbnf-l3-$$" 2>&1 | tail -20; fail "l3 traffic through the container"; }
m=$(metrics "$PID")
rx0=$(echo "$m" | awk '/^skbnf_port_packets_total\{.*port="0",direction="rx"/ {s += $2} END {print s + 0}')
tx1=$(echo "$m" | awk '/^skbnf_port_packets_total\{.*port="1",direction="tx"/ {s += $2} END {print s + 0}')
[ "$rx0" -ge "$N" ] && [ "$tx1" -ge "$N" ] || fail "l3 counters: port 0 rx $rx0, port 1 tx $tx1 (sent $N)"
$DOCKER stop -t 20 "skbnf-l3-$$" >/dev/null
log=$($DOCKER logs "skbnf-l3-$$" 2>&1)
grep -q 'audit OK' <<<"$log" || { tail <<<"$log"; fail "l3: no clean audit at stop"; }
phase "l3: $N frames host ha -> vf0 -> skbnfd -> vf1 -> host hb, TTL 63, MACs rewritten; metrics rx $rx0 tx $tx1"
echo "PASS"
