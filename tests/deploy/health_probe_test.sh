#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# deploy.health_probe: skbnf_health, the probe of the container HEALTHCHECK and the Helm chart,
# against skbnfd (the demo) with the chart's TLS set-up: the server certificate names the gRPC
# Service (skbnf-grpc.net.svc), the probe connects to 127.0.0.1 with --tls-ca and
# --tls-server-name, exactly the command the chart renders. It must say SERVING there and fail
# for every way the set-up can be wrong (no TLS, another CA, another name, unknown service, the
# daemon gone). With --health-listen, the same probe asks the plaintext health-only port (the
# kubelet's gRPC probe's port) for liveness and readiness. Environment: SKBNFD, SKBNF_HEALTH.
set -euo pipefail
: "${SKBNFD:?}" "${SKBNF_HEALTH:?}"
D=$(mktemp -d /tmp/skbnf-health.XXXXXX)
PID=
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
  rm -rf "$D"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  [ -f "$D/skbnfd.log" ] && tail -5 "$D/skbnfd.log"
  exit 1
}
cd "$D"
key="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
{
  openssl req -x509 $key -keyout ca.key -out ca.crt -days 2 -subj '/CN=skbnf test CA'
  openssl req -x509 $key -keyout rogue.key -out rogue.crt -days 2 -subj '/CN=rogue CA'
  printf 'subjectAltName=DNS:skbnf-grpc.net.svc\n' >server.ext
  openssl req $key -keyout server.key -out server.csr -subj '/CN=skbnf-grpc.net.svc'
  openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
    -extfile server.ext -out server.crt
} >openssl.log 2>&1 || { cat openssl.log; fail "openssl"; }

"$SKBNFD" --stats=0 --listen=127.0.0.1:0 --metrics-addr=off --ready-file="$D/ready.json" \
  --tls-cert=server.crt --tls-key=server.key --tls-client-ca=ca.crt \
  --health-listen=127.0.0.1:0 >skbnfd.log 2>&1 &
PID=$!
for _ in $(seq 300); do
  [ -s ready.json ] && break
  kill -0 "$PID" 2>/dev/null || fail "skbnfd exited"
  sleep 0.1
done
[ -s ready.json ] || fail "skbnfd not ready"
ADDR=$(sed -n 's/.*"grpc":"\([^"]*\)".*/\1/p' ready.json)
HEALTH=$(sed -n 's/.*"health":"\([^"]*\)".*/\1/p' ready.json)
[ -n "$HEALTH" ] || fail "no health address in ready.json: $(cat ready.json)"
probe=("$SKBNF_HEALTH" --addr="$ADDR" --tls-ca=ca.crt --tls-server-name=skbnf-grpc.net.svc)

expect() { # expect CODE DESCRIPTION -- COMMAND...
  local want=$1 what=$2
  shift 3
  local got=0
  "$@" >out.txt 2>&1 || got=$?
  [ "$got" = "$want" ] || { cat out.txt; fail "$what: exit $got, want $want"; }
  echo "ok: $what (exit $got: $(head -1 out.txt))"
}
ok=0
for _ in $(seq 100); do # SERVING once the links are up and the workers run
  if "${probe[@]}" >/dev/null 2>&1; then ok=1; break; fi
  sleep 0.1
done
[ $ok = 1 ] || fail "never SERVING"
expect 0 "chart's TLS probe" -- "${probe[@]}"
expect 0 "service skbnf.v1.Control" -- "${probe[@]}" --service=skbnf.v1.Control
expect 0 "liveness (--alive)" -- "${probe[@]}" --alive
expect 0 "service liveness over TLS" -- "${probe[@]}" --service=liveness
expect 0 "service readiness over TLS" -- "${probe[@]}" --service=readiness
expect 0 "health-only port, plaintext, liveness" -- "$SKBNF_HEALTH" --addr="$HEALTH" \
  --service=liveness
expect 0 "health-only port, plaintext, readiness" -- "$SKBNF_HEALTH" --addr="$HEALTH" \
  --service=readiness
expect 0 "health-only port, plaintext, \"\"" -- "$SKBNF_HEALTH" --addr="$HEALTH"
expect 1 "health-only port, unknown service" -- "$SKBNF_HEALTH" --addr="$HEALTH" --service=nope
expect 1 "health-only port is not TLS" -- "$SKBNF_HEALTH" --addr="$HEALTH" --tls-ca=ca.crt \
  --tls-server-name=skbnf-grpc.net.svc --timeout=2
expect 1 "unknown service" -- "${probe[@]}" --service=nope
expect 1 "plaintext to the TLS listener" -- "$SKBNF_HEALTH" --addr="$ADDR" --timeout=2
expect 1 "server certificate from another CA" -- "$SKBNF_HEALTH" --addr="$ADDR" \
  --tls-ca=rogue.crt --tls-server-name=skbnf-grpc.net.svc --timeout=2
expect 1 "another server name" -- "$SKBNF_HEALTH" --addr="$ADDR" --tls-ca=ca.crt \
  --tls-server-name=other.net.svc --timeout=2
expect 2 "usage error" -- "$SKBNF_HEALTH" --addr="$ADDR" --tls-cert=x.crt
expect 2 "unreadable CA file" -- "$SKBNF_HEALTH" --addr="$ADDR" --tls-ca=missing.crt
kill "$PID"
wait "$PID" || true
PID=
expect 1 "daemon gone, even with --alive" -- "${probe[@]}" --alive --timeout=2
echo PASS
