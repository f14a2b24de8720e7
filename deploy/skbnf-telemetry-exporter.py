#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Prometheus metrics for a DPDK application that loads the skbnf plugin (libskbnf_mempool.so).

skbnfd exports its buffer ages on its own /metrics; an application that only loads the plugin
has DPDK's telemetry socket instead, where the plugin answers /skbnf/ages
(dataplane/dpdk/plugin_telemetry.h). This exporter asks it at every scrape and writes the
metrics skbnfd writes (server/core/metric_families.h), with a `pool` label besides:

  skbnf_pool_tracking{pool}                         1 while the pool's strategy has `track`
  skbnf_pool_inflight_age_seconds{pool,site,core,port}  histogram (_bucket{le}, _sum, _count)
  skbnf_pool_inflight_untracked_objects{pool}       in flight without a stamp

so deploy/prometheus/skbnf-rules.yaml's SkbnfBuffersLeaking reads a plugin host as it reads
skbnfd (its old-objects rule falls back to the plain old count on a target without RX ring
figures). `core` is the lcore for the sites worker and application ("" for other), `port` the
RX port for rx ("" otherwise).

  skbnf-telemetry-exporter.py --listen 127.0.0.1:9479 --file-prefix <EAL --file-prefix>
  skbnf-telemetry-exporter.py --listen :9479 --socket /var/run/dpdk/rte/dpdk_telemetry.v2

The socket protocol is DPDK 22.11's usertools/dpdk-telemetry.py: connect (SOCK_SEQPACKET), read
the JSON greeting (its max_output_len is the largest reply), send the command, read one reply.
A scrape the application cannot answer is a 503 (Prometheus: up 0). Python 3 stdlib only.
"""
import argparse
import http.server
import json
import os
import socket
import sys

GREETING_LEN = 1024


def runtime_dir():
    """EAL's runtime directory: /var/run/dpdk as root, else $XDG_RUNTIME_DIR/dpdk (or /tmp)."""
    if os.getuid() == 0:
        return "/var/run/dpdk"
    return os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "dpdk")


def ask(path, command, timeout=10):
    """One telemetry command's reply (the value under its name)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(timeout)
        s.connect(path)
        greeting = json.loads(s.recv(GREETING_LEN).decode())
        s.send(command.encode())
        reply = json.loads(s.recv(int(greeting["max_output_len"])).decode())
    return reply.get(command.split(",")[0])


def label_text(labels):
    return ",".join('%s="%s"' % (k, str(v).replace("\\", "\\\\").replace('"', '\\"'))
                    for k, v in labels)


def metrics_text(ages):
    """The exposition text of a /skbnf/ages reply."""
    tracking, hist, untracked = [], [], []
    for name, pool in sorted((ages or {}).items()):
        tracking.append("skbnf_pool_tracking{%s} %d" % (label_text([("pool", name)]),
                                                         int(pool.get("tracking", 0))))
        if not int(pool.get("tracking", 0)) or "sites" not in pool:
            continue
        untracked.append("skbnf_pool_inflight_untracked_objects{%s} %d" % (
            label_text([("pool", name)]), int(pool["untracked"])))
        for site in pool["sites"].values():
            kind = site["site"]
            core = str(site["core"]) if kind in ("worker", "rx", "application") else ""
            port = str(site["port"]) if kind == "rx" else ""
            base = [("pool", name), ("site", kind), ("core", core), ("port", port)]
            for le, n in zip(site["le"], site["buckets"]):
                hist.append("skbnf_pool_inflight_age_seconds_bucket{%s} %d" % (
                    label_text(base + [("le", le)]), int(n)))
            hist.append("skbnf_pool_inflight_age_seconds_sum{%s} %s" % (
                label_text(base), float(site["sum_seconds"])))
            hist.append("skbnf_pool_inflight_age_seconds_count{%s} %d" % (
                label_text(base), int(site["objects"])))
    out = [
        "# HELP skbnf_pool_tracking 1 while the strategy carries the 'track' modifier.",
        "# TYPE skbnf_pool_tracking gauge"] + tracking + [
        "# HELP skbnf_pool_inflight_age_seconds Ages of the objects in flight at the latest "
        "buffer census, by allocation site: a snapshot (query the buckets, never rate()).",
        "# TYPE skbnf_pool_inflight_age_seconds histogram"] + hist + [
        "# HELP skbnf_pool_inflight_untracked_objects Objects in flight at the latest buffer "
        "census without a stamp.",
        "# TYPE skbnf_pool_inflight_untracked_objects gauge"] + untracked
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", default="127.0.0.1:9479", help="HOST:PORT to serve /metrics on")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--file-prefix", default="rte", help="the application's EAL --file-prefix")
    where.add_argument("--socket", help="the telemetry socket's path (dpdk_telemetry.v2)")
    args = ap.parse_args()
    path = args.socket or os.path.join(runtime_dir(), args.file_prefix, "dpdk_telemetry.v2")
    host, _, port = args.listen.rpartition(":")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404, "only /metrics")
                return
            try:
                body = metrics_text(ask(path, "/skbnf/ages")).encode()
            except (OSError, ValueError, KeyError) as e:
                self.send_error(503, "telemetry %s: %s" % (path, e))
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *a):
            pass

    server = http.server.ThreadingHTTPServer((host or "0.0.0.0", int(port)), Handler)
    print("serving http://%s:%d/metrics from %s" % (host or "0.0.0.0", server.server_port, path),
          flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
