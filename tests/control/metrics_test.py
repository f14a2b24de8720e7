# SPDX-License-Identifier: BSD-3-Clause
"""/metrics of the daemon: scraped, parsed, checked by promtool, and checked to move with the
data plane (packets per core grow, alloc/free counters follow the strategy in force)."""

import json
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_harness as h  # noqa: E402

# family -> type, every one the issue asks for.
REQUIRED = {
    "skbnf_port_packets_total": "counter",
    "skbnf_port_bytes_total": "counter",
    "skbnf_port_drops_total": "counter",
    "skbnf_port_rx_nombuf_total": "counter",
    "skbnf_core_packets_per_second": "gauge",
    "skbnf_worker_polls_total": "counter",
    "skbnf_worker_busy_polls_total": "counter",
    "skbnf_worker_busy_ratio": "gauge",
    "skbnf_worker_paused": "gauge",
    "skbnf_worker_parked_loops_total": "counter",
    "skbnf_worker_busy_cycles_total": "counter",
    "skbnf_worker_busy_packets_total": "counter",
    "skbnf_worker_tsc_hz": "gauge",
    "skbnf_pool_allocs_total": "counter",
    "skbnf_pool_frees_total": "counter",
    "skbnf_pool_objects": "gauge",
    "skbnf_pool_populated_objects": "gauge",
    "skbnf_pool_reclaims_total": "counter",
    "skbnf_pool_reclaim_timeouts_total": "counter",
    "skbnf_pool_reclaimed_objects_total": "counter",
    "skbnf_control_changes_total": "counter",
    "skbnf_strategy_info": "gauge",
    "skbnf_strategy_swaps_total": "counter",
    "skbnf_strategy_swap_duration_seconds": "histogram",
    "skbnf_build_info": "gauge",
}


def wait_until(predicate, attempts=500, pause=0.02):
    """Polls `predicate` (bounded, ~10 s); returns its last value."""
    v = predicate()
    for _ in range(attempts):
        if v:
            return v
        time.sleep(pause)
        v = predicate()
    return v


class MetricsTest(h.SharedDaemon):
    def scrape(self):
        return h.parse_metrics(self.d.scrape())

    def workers(self):
        """The worker cores (never empty: a loop over them asserts something)."""
        code, out, err = self.d.ctl("--json", "info")
        self.assertEqual(code, 0, err)
        cores = [l.get("core", 0) for l in json.loads(out)["lcores"]
                 if l["role"] == "LCORE_ROLE_WORKER"]
        self.assertTrue(cores, "the daemon reports no worker core")
        return cores

    def wait_parked_rounds(self, core):
        """Waits until the paused worker on `core` has gone round its parked loop twice since
        this call (skbnf_worker_parked_loops_total, the worker's own acknowledgement): the first
        round may have begun before the call, the second after it, so whatever a round would
        have done (a poll, a packet) is counted in every scrape taken after this returns.
        "Nothing moved while parked" then compares scrapes taken before the call with one
        taken after, instead of hoping a sleep was long enough."""
        loops = lambda: h.total(self.scrape()[1], "skbnf_worker_parked_loops_total",  # noqa: E731
                                core=core)
        base = loops()
        self.assertTrue(wait_until(lambda: loops() >= base + 2),
                        "core %s: a paused worker acknowledges no parked round" % core)

    def test_promtool_accepts_the_exposition(self):
        text = self.d.scrape()
        p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_every_required_family_with_its_type(self):
        types, samples = self.scrape()
        for name, typ in REQUIRED.items():
            self.assertEqual(types.get(name), typ, name)
        for name in types:
            if name.startswith("skbnf_") and types[name] == "counter":
                self.assertTrue(name.endswith("_total"), name)
        names = {n for n, _, _ in samples}
        for name in REQUIRED:
            if REQUIRED[name] == "histogram":
                self.assertIn(name + "_count", names)
            else:
                self.assertIn(name, names)

    def test_every_exported_family_is_defined_in_the_one_list(self):
        # Metric families are defined once (server/core/metric_families.h: name, type, help); a
        # collector that writes a family of its own is caught here.
        header = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "server",
                              "core", "metric_families.h")
        with open(header) as f:
            text = f.read()
        defined = dict(re.findall(r'MetricDef k\w+\{\s*"(skbnf_\w+)", k(Counter|Gauge|Histogram)',
                                  text))
        self.assertGreater(len(defined), 40, "the list was not read")
        types, _ = self.scrape()
        for name, typ in types.items():
            if not name.startswith("skbnf_"):
                continue
            self.assertIn(name, defined, "%s is exported but not defined in metric_families.h" % name)
            self.assertEqual(defined[name].lower(), typ, name)

    def test_per_core_packet_counters_grow(self):
        _, a = self.scrape()
        for core in self.workers():
            before = h.total(a, "skbnf_port_packets_total", core=core, direction="rx")
            grew = wait_until(lambda: h.total(self.scrape()[1], "skbnf_port_packets_total",
                                              core=core, direction="rx") > before)
            self.assertTrue(grew, "core %s rx packets did not grow past %s" % (core, before))
        # and the per-core pps gauge says so once the sampler has a window
        pps = wait_until(lambda: all(
            h.total(self.scrape()[1], "skbnf_core_packets_per_second", core=c, direction="rx") > 0
            for c in self.workers()))
        self.assertTrue(pps)

    def layer_allocs(self, samples, layer):
        return h.total(samples, "skbnf_pool_allocs_total", layer=layer)

    def test_alloc_free_counters_follow_the_strategy(self):
        for spec, active, idle in (("headpool", "headpool", "magazine"),
                                   ("magazine", "magazine", "headpool")):
            code, _, err = self.d.ctl("strategy", "set", spec)
            self.assertEqual(code, 0, err)
            _, a = self.scrape()
            # the active layer's counters move ...
            moved = wait_until(lambda: self.layer_allocs(self.scrape()[1], active) >
                               self.layer_allocs(a, active))
            self.assertTrue(moved, "%s allocs did not move under %s" % (active, spec))
            frees = wait_until(lambda: h.total(self.scrape()[1], "skbnf_pool_frees_total",
                                               layer=active, result="hit") >
                               h.total(a, "skbnf_pool_frees_total", layer=active, result="hit"))
            self.assertTrue(frees)
            # ... the layer that is not in the stack stands still.
            _, b = self.scrape()
            self.assertEqual(self.layer_allocs(b, idle), self.layer_allocs(a, idle), idle)

    def test_strategy_info_swaps_and_histogram(self):
        _, a = self.scrape()
        code, out, err = self.d.ctl("--json", "strategy", "get")
        self.assertEqual(code, 0, err)
        spec = json.loads(out)["spec"]
        self.assertEqual(h.values(a, "skbnf_strategy_info"), {frozenset({("spec", spec)}): 1.0})
        target = "recycle+headpool" if spec != "recycle+headpool" else "magazine"
        code, _, err = self.d.ctl("strategy", "set", target)
        self.assertEqual(code, 0, err)
        _, b = self.scrape()
        self.assertEqual(h.values(b, "skbnf_strategy_info"), {frozenset({("spec", target)}): 1.0})
        self.assertEqual(h.total(b, "skbnf_strategy_swaps_total", result="ok"),
                         h.total(a, "skbnf_strategy_swaps_total", result="ok") + 1)
        self.assertEqual(h.total(b, "skbnf_strategy_swap_duration_seconds_count"),
                         h.total(a, "skbnf_strategy_swap_duration_seconds_count") + 1)
        self.assertGreater(h.total(b, "skbnf_strategy_swap_duration_seconds_sum"),
                           h.total(a, "skbnf_strategy_swap_duration_seconds_sum"))
        buckets = sorted((float(dict(k)["le"]), v) for k, v in
                         h.values(b, "skbnf_strategy_swap_duration_seconds_bucket").items())
        self.assertEqual(buckets[-1], (float("inf"),
                                       h.total(b, "skbnf_strategy_swap_duration_seconds_count")))
        counts = [v for _, v in buckets]
        self.assertEqual(counts, sorted(counts), "buckets must be cumulative")
        self.assertEqual(h.total(b, "skbnf_strategy_epoch"), h.total(a, "skbnf_strategy_epoch") + 1)

    def test_in_flight_gauge_agrees_with_the_counters(self):
        # Two independent figures of the objects out of the pool: the gauge (populated - store -
        # layers - depots) and the counters (host allocs - host frees, every core and "other").
        # With every worker parked nothing allocates or frees, so they must be equal.
        cores = self.workers()
        for core in cores:
            code, _, err = self.d.ctl("worker", "pause", str(core))
            self.assertEqual(code, 0, err)
        try:
            _, s = self.scrape()
            self.assertGreater(h.total(s, "skbnf_pool_populated_objects"), 0)
            states = {dict(k)["state"] for k in h.values(s, "skbnf_pool_objects")}
            self.assertEqual(states, {"in_store", "in_depots", "in_flight", "lcache", "recycle",
                                      "headpool", "magazine"})
            held = (h.total(s, "skbnf_pool_host_allocs_total") -
                    h.total(s, "skbnf_pool_host_frees_total"))
            self.assertEqual(h.total(s, "skbnf_pool_objects", state="in_flight"), held)
        finally:
            for core in cores:
                code, _, err = self.d.ctl("worker", "resume", str(core))
                self.assertEqual(code, 0, err)

    def test_build_info(self):
        _, s = self.scrape()
        info = h.values(s, "skbnf_build_info")
        self.assertEqual(len(info), 1)
        labels = dict(next(iter(info)))
        self.assertEqual(set(labels), {"version", "git_commit", "compiler", "build_type"})
        self.assertEqual(next(iter(info.values())), 1.0)

    def test_port_link_and_pmd_counters(self):
        types, s = self.scrape()
        for name, typ in (("skbnf_port_info", "gauge"), ("skbnf_port_link_up", "gauge"),
                          ("skbnf_port_link_speed_bytes_per_second", "gauge"),
                          ("skbnf_port_pmd_packets_total", "counter"),
                          ("skbnf_port_pmd_rx_missed_packets_total", "counter"),
                          ("skbnf_port_pmd_rx_errors_total", "counter"),
                          ("skbnf_port_pmd_tx_errors_total", "counter"),
                          ("skbnf_port_pmd_rx_nombuf_total", "counter")):
            self.assertEqual(types.get(name), typ, name)
        code, out, err = self.d.ctl("--json", "ports")
        self.assertEqual(code, 0, err)
        ports = json.loads(out)["ports"]
        self.assertTrue(ports, "the daemon reports no port")
        ids = {str(p["id"]) for p in ports}
        self.assertEqual({dict(k)["port"] for k in h.values(s, "skbnf_port_info")}, ids)
        for p in ports:
            self.assertEqual(h.total(s, "skbnf_port_link_up", port=str(p["id"])),
                             1.0 if p.get("link_up") else 0.0)
            if "pmd" in p:  # the PMD's own counters (scraped before this ListPorts)
                self.assertLessEqual(
                    h.total(s, "skbnf_port_pmd_packets_total", port=str(p["id"]), direction="rx"),
                    int(p["pmd"]["ipackets"]))

    def test_busy_cycles_move_with_traffic_and_stand_still_when_idle(self):
        _, s = self.scrape()
        hz = h.total(s, "skbnf_worker_tsc_hz")
        self.assertGreater(hz, 0)
        for core in self.workers():
            _, a = self.scrape()
            cyc = lambda x: h.total(x, "skbnf_worker_busy_cycles_total", core=core)  # noqa: E731
            pk = lambda x: h.total(x, "skbnf_worker_busy_packets_total", core=core)  # noqa: E731
            grew = wait_until(lambda: pk(self.scrape()[1]) > pk(a))
            self.assertTrue(grew, "core %s busy packets did not grow" % core)
            _, b = self.scrape()
            self.assertGreater(cyc(b), cyc(a), "core %s: packets without cycles" % core)
            # cycles per packet is a positive figure (no bound on time here: a busy poll that
            # began before the first scrape counts whole; dataplane_test bounds it exactly)
            self.assertGreater((cyc(b) - cyc(a)) / (pk(b) - pk(a)), 1.0)
        # A parked worker receives nothing: its busy counters stand still, and every packet it
        # received was counted by a busy poll (busy packets == its RX packets, exactly).
        core = self.workers()[0]
        code, _, err = self.d.ctl("worker", "pause", str(core))
        self.assertEqual(code, 0, err)
        try:
            _, a = self.scrape()
            self.wait_parked_rounds(core)
            _, b = self.scrape()
            for name in ("skbnf_worker_busy_cycles_total", "skbnf_worker_busy_packets_total"):
                self.assertEqual(h.total(b, name, core=core), h.total(a, name, core=core), name)
            self.assertEqual(h.total(b, "skbnf_worker_busy_packets_total", core=core),
                             h.total(b, "skbnf_port_packets_total", core=core, direction="rx"))
        finally:
            code, _, err = self.d.ctl("worker", "resume", str(core))
            self.assertEqual(code, 0, err)

    def test_paused_gauge_and_busy_ratio(self):
        core = self.workers()[-1]
        code, _, err = self.d.ctl("worker", "pause", str(core))
        self.assertEqual(code, 0, err)
        try:
            _, s = self.scrape()
            self.assertEqual(h.total(s, "skbnf_worker_paused", core=core), 1.0)
            before = h.total(s, "skbnf_worker_polls_total", core=core)
            self.wait_parked_rounds(core)
            self.assertEqual(h.total(self.scrape()[1], "skbnf_worker_polls_total", core=core),
                             before, "a parked worker does not poll")
        finally:
            code, _, err = self.d.ctl("worker", "resume", str(core))
            self.assertEqual(code, 0, err)
        # ResumeWorker returns once the resume is published; the worker may report itself
        # running a moment later.
        self.assertTrue(wait_until(lambda: h.total(self.scrape()[1], "skbnf_worker_paused",
                                                   core=core) == 0.0))
        _, s = self.scrape()
        ratios = h.values(s, "skbnf_worker_busy_ratio")
        self.assertEqual(len(ratios), len(self.workers()), "one busy ratio per worker")
        for v in ratios.values():
            self.assertGreaterEqual(v, 0.0)
            self.assertLessEqual(v, 1.0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
