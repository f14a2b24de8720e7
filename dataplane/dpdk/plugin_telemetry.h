// SPDX-License-Identifier: BSD-3-Clause
// The plugin's own telemetry command, /skbnf/ages: the track modifier's census (pool/track.h)
// of every live skbnf pool of a foreign application, through DPDK's telemetry socket.
//
// skbnfd answers the same question over gRPC, /metrics and its own /skbnf/* commands; a
// foreign application that loads libskbnf_mempool.so has none of those, only DPDK's
// telemetry socket (dpdk-telemetry.py, deploy/skbnf-telemetry-exporter.py). So the plugin
// build (and only it: slot_cache_plugin.cc's StartHost/StopHost) keeps a registry of its live
// pools and registers the command once per process, in the primary, at its first pool.
//
//   /skbnf/ages  {<pool name>: {tracking, populated, in_flight, untracked, tracked,
//                               sites: {<site key>: {site, core, port, objects, max_seconds,
//                                                    sum_seconds, older_than_300s,
//                                                    le: [bounds], buckets: [counts]}}}}}
//
// DPDK 22.11's telemetry cannot put a dict in an array (rte_tel_data_add_array_container takes
// arrays of numbers or strings only), so `sites` is a dict keyed by "<site>[/core[/port]]",
// e.g. "application/1", "rx/1/0", "other"; each entry repeats its site, core and port (-1:
// none). `le` lists the bounds of pool::kAgeBucketsSeconds as text ("0.001" ... "86400", then
// "+Inf") and `buckets` the cumulative counts in the same order, as Prometheus' le buckets (22.11
// refuses '.' and '+' in a dict key). max_seconds and sum_seconds are decimal text (22.11's
// dict has no floating-point value).
//
// Standing sites, as skbnfd's: every EAL lcore's "application" site and "other" are listed
// even with nothing in flight, so their series read 0 when the holder lets go.
//
// The handler runs on DPDK's telemetry thread (a non-EAL thread, one per client connection):
// a census there is safe, it robs the foreign owners' layers (pool_core.h, "No stranded
// objects"). At most one census per pool per second: a younger result is answered again.
//
// Includes DPDK headers: for this directory's driver files only.
#ifndef SKBNF_DATAPLANE_DPDK_PLUGIN_TELEMETRY_H_
#define SKBNF_DATAPLANE_DPDK_PLUGIN_TELEMETRY_H_

#include "dataplane/dpdk/mempool_driver.h"

namespace skbnf::dpdk::driver {

// A pool the plugin made (StartHost): listed for /skbnf/ages; the first one registers the
// command (primary only). Never fails the pool: a command DPDK refuses is reported on stderr.
void AddTelemetryPool(DriverPool& dp);
// StopHost, before the pool is destroyed: unlisted, after any census of it has finished.
void RemoveTelemetryPool(const DriverPool& dp);

}  // namespace skbnf::dpdk::driver

#endif  // SKBNF_DATAPLANE_DPDK_PLUGIN_TELEMETRY_H_
