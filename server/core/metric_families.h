// SPDX-License-Identifier: BSD-3-Clause
// MetricDef: every Prometheus family skbnf exports, defined here once: its name, its type and
// its help text.
//
// Why one list: a family's name is an API (deploy/'s alert rules, the Grafana dashboard, users'
// queries), and names written inline by each collector drift apart, or get the same name twice
// with two meanings. The collectors (server/metrics/metrics.cc, change_log.cc, limits.cc,
// tls_reload.cc, server/ops/config_reload.cc) fill samples into NewFamily(metric::kX); the
// labels and values are theirs, the family is this file's. kAll lists every definition, so a
// test can hold them unique and well formed (counters end in _total, every name is skbnf_*) and
// the scrape tests can check that nothing is exported that is not defined here.
#ifndef SKBNF_SERVER_CORE_METRIC_FAMILIES_H_
#define SKBNF_SERVER_CORE_METRIC_FAMILIES_H_

#include <array>
#include <string>

#include "absl/strings/string_view.h"
#include "prometheus/metric_family.h"
#include "prometheus/metric_type.h"

namespace skbnf::control {

struct MetricDef {
  absl::string_view name;
  prometheus::MetricType type;
  absl::string_view help;
};

// An empty family of `d`, for a collector to fill.
inline prometheus::MetricFamily NewFamily(const MetricDef& d) {
  return prometheus::MetricFamily{std::string(d.name), std::string(d.help), d.type, {}};
}

namespace metric {

inline constexpr prometheus::MetricType kCounter = prometheus::MetricType::Counter;
inline constexpr prometheus::MetricType kGauge = prometheus::MetricType::Gauge;
inline constexpr prometheus::MetricType kHistogram = prometheus::MetricType::Histogram;

// ---- Ports: per core and port (counters) and per port (the PMD, the link)
inline constexpr MetricDef kPortRingMbufs{
    "skbnf_port_ring_mbufs", kGauge,
    "Mbufs sitting in the port's RX or TX rings now: counted by the pool around every PMD "
    "call (skbnf pools, every port), else from the PMD's rings (AF_XDP: fill+RX, TX+completion)."};
inline constexpr MetricDef kPortPacketsTotal{"skbnf_port_packets_total", kCounter,
                                             "Packets per core, port and direction."};
inline constexpr MetricDef kPortBytesTotal{"skbnf_port_bytes_total", kCounter,
                                           "Bytes per core, port and direction."};
inline constexpr MetricDef kPortDropsTotal{"skbnf_port_drops_total", kCounter,
                                           "Dropped packets per core, RX port and reason."};
inline constexpr MetricDef kPortRxNombufTotal{"skbnf_port_rx_nombuf_total", kCounter,
                                              "RX refills that found no buffer."};
inline constexpr MetricDef kPortInfo{
    "skbnf_port_info", kGauge, "A port's identity (value always 1): name, driver, device, MAC."};
inline constexpr MetricDef kPortLinkUp{"skbnf_port_link_up", kGauge,
                                       "1 while the port's link is up, 0 while down."};
inline constexpr MetricDef kPortLinkSpeedBytesPerSecond{
    "skbnf_port_link_speed_bytes_per_second", kGauge,
    "Link speed reported by the PMD (0: unknown)."};
inline constexpr MetricDef kPortPmdPacketsTotal{
    "skbnf_port_pmd_packets_total", kCounter, "Packets the PMD counted on the port, by direction."};
inline constexpr MetricDef kPortPmdBytesTotal{"skbnf_port_pmd_bytes_total", kCounter,
                                              "Bytes the PMD counted on the port, by direction."};
inline constexpr MetricDef kPortPmdRxMissedPacketsTotal{
    "skbnf_port_pmd_rx_missed_packets_total", kCounter,
    "Packets the NIC dropped because the RX ring was full (imissed)."};
inline constexpr MetricDef kPortPmdRxErrorsTotal{"skbnf_port_pmd_rx_errors_total", kCounter,
                                                 "Erroneous received packets (ierrors)."};
inline constexpr MetricDef kPortPmdTxErrorsTotal{"skbnf_port_pmd_tx_errors_total", kCounter,
                                                 "Failed transmits (oerrors)."};
inline constexpr MetricDef kPortPmdRxNombufTotal{
    "skbnf_port_pmd_rx_nombuf_total", kCounter,
    "RX mbuf allocation failures the PMD counted (rx_nombuf)."};

// ---- Workers and their loop
inline constexpr MetricDef kCorePacketsPerSecond{
    "skbnf_core_packets_per_second", kGauge, "Per-core packet rate over the last sampling window."};
inline constexpr MetricDef kWorkerPollsTotal{"skbnf_worker_polls_total", kCounter,
                                             "Worker poll-loop iterations."};
inline constexpr MetricDef kWorkerBusyPollsTotal{"skbnf_worker_busy_polls_total", kCounter,
                                                 "Poll-loop iterations that received packets."};
inline constexpr MetricDef kWorkerBusyRatio{
    "skbnf_worker_busy_ratio", kGauge,
    "Share of busy poll iterations over the last sampling window."};
inline constexpr MetricDef kWorkerPaused{"skbnf_worker_paused", kGauge,
                                         "1 while the worker is parked by PauseWorker."};
inline constexpr MetricDef kWorkerParkedLoopsTotal{
    "skbnf_worker_parked_loops_total", kCounter,
    "Worker loop iterations spent parked (not polling): moves while a paused worker "
    "is alive."};
inline constexpr MetricDef kWorkerBusyCyclesTotal{
    "skbnf_worker_busy_cycles_total", kCounter,
    "TSC cycles of the poll iterations that received packets (RX burst to after forwarding)."};
inline constexpr MetricDef kWorkerBusyPacketsTotal{"skbnf_worker_busy_packets_total", kCounter,
                                                   "Packets received by those poll iterations."};
inline constexpr MetricDef kWorkerTscHz{
    "skbnf_worker_tsc_hz", kGauge,
    "Frequency of the TSC the busy-cycle counters count (cycles per second)."};

// ---- Packet latency and the poll loop's iterations (common/worker_perf.h)
inline constexpr MetricDef kPacketLatencySeconds{
    "skbnf_packet_latency_seconds", kHistogram,
    "Latency of sampled packets through skbnfd, RX burst to TX burst, per worker core and RX "
    "port (1 in N RX bursts: skbnf_latency_sample_every)."};
inline constexpr MetricDef kLatencySampleEvery{
    "skbnf_latency_sample_every", kGauge,
    "1 in this many RX bursts is timed (every packet of it); 0: latency sampling off."};
inline constexpr MetricDef kWorkerIterationSeconds{
    "skbnf_worker_iteration_seconds", kHistogram,
    "Duration of the worker's poll-loop iterations (buckets: powers of two of TSC cycles)."};
inline constexpr MetricDef kWorkerIterationPackets{
    "skbnf_worker_iteration_packets", kHistogram,
    "Packets received per poll-loop iteration."};
inline constexpr MetricDef kWorkerSlowIterationsTotal{
    "skbnf_worker_slow_iterations_total", kCounter,
    "Iterations longer than the slow-iteration threshold (skbnf_worker_slow_iteration_seconds)."};
inline constexpr MetricDef kWorkerSlowIterationSeconds{
    "skbnf_worker_slow_iteration_seconds", kGauge,
    "The slow-iteration threshold (SetLatency slow_iteration_us)."};

// ---- The buffer core: per core and layer, and the pool as a whole
inline constexpr MetricDef kPoolAllocsTotal{
    "skbnf_pool_allocs_total", kCounter,
    "A layer's allocs: objects allocated through a per-core layer, by result (hit: from the "
    "layer, miss: from below). The host's allocs are skbnf_pool_host_allocs_total."};
inline constexpr MetricDef kPoolFreesTotal{
    "skbnf_pool_frees_total", kCounter,
    "Objects freed into a per-core layer, by result (hit: kept, miss: passed below)."};
inline constexpr MetricDef kPoolBulkTransfersTotal{
    "skbnf_pool_bulk_transfers_total", kCounter,
    "Whole-batch transfers between a layer and the one below."};
inline constexpr MetricDef kPoolHostAllocsTotal{
    "skbnf_pool_host_allocs_total", kCounter,
    "The host's allocs: objects the pool handed to the host (Stats.CorePoolStats.host_allocs)."};
inline constexpr MetricDef kPoolHostFreesTotal{"skbnf_pool_host_frees_total", kCounter,
                                               "Objects the host returned to the pool."};
inline constexpr MetricDef kPoolAllocFailuresTotal{
    "skbnf_pool_alloc_failures_total", kCounter, "Allocation requests the pool could not satisfy."};
inline constexpr MetricDef kPoolStoreAllocsTotal{"skbnf_pool_store_allocs_total", kCounter,
                                                 "Objects taken from the slab store."};
inline constexpr MetricDef kPoolStoreFreesTotal{"skbnf_pool_store_frees_total", kCounter,
                                                "Objects returned to the slab store."};
inline constexpr MetricDef kPoolStoreLockAcquisitionsTotal{
    "skbnf_pool_store_lock_acquisitions_total", kCounter, "Slab store lock acquisitions."};
inline constexpr MetricDef kPoolDepotLockAcquisitionsTotal{
    "skbnf_pool_depot_lock_acquisitions_total", kCounter, "Magazine depot lock acquisitions."};
inline constexpr MetricDef kPoolDepotLockWaitsTotal{
    "skbnf_pool_depot_lock_waits_total", kCounter,
    "Magazine depot lock acquisitions that waited for another core."};
inline constexpr MetricDef kPoolObjects{"skbnf_pool_objects", kGauge,
                                        "Pool objects by where they are now."};
inline constexpr MetricDef kPoolPopulatedObjects{"skbnf_pool_populated_objects", kGauge,
                                                 "Objects in the pool."};
inline constexpr MetricDef kPoolHeldObjects{
    "skbnf_pool_held_objects", kGauge,
    "Pool objects a thread holds now, out of any ring: a worker's (core=N: received, not yet "
    "sent or freed) or the other threads' (core=\"other\": an application's lcore, a PMD's "
    "own thread)."};
inline constexpr MetricDef kPoolUnaccountedObjects{
    "skbnf_pool_unaccounted_objects", kGauge,
    "Pool objects out of the pool that no place explains (in flight minus rings and holders): "
    "0 while the pool's bookkeeping holds; read while the workers run it may be off by a "
    "burst."};
inline constexpr MetricDef kPoolInflightAgeSeconds{
    "skbnf_pool_inflight_age_seconds", kHistogram,
    "Ages of the objects in flight at the latest buffer census, by allocation site (rx: a worker "
    "refilling an RX port; worker; application: a non-worker lcore; other): a snapshot, so a "
    "bucket may fall between scrapes (query the buckets, never rate()). Only while the strategy "
    "carries 'track'."};
inline constexpr MetricDef kPoolInflightUntrackedObjects{
    "skbnf_pool_inflight_untracked_objects", kGauge,
    "Objects in flight at the latest buffer census without a stamp: out since before tracking "
    "began."};
inline constexpr MetricDef kPoolTracking{
    "skbnf_pool_tracking", kGauge,
    "1 while the strategy carries the 'track' modifier (buffer ages are recorded), else 0."};
inline constexpr MetricDef kPoolReclaimsTotal{
    "skbnf_pool_reclaims_total", kCounter,
    "Gets that found every layer, depot and the store empty and reclaimed what other "
    "cores' layers held before failing (the no-stranding protocol)."};
inline constexpr MetricDef kPoolReclaimTimeoutsTotal{
    "skbnf_pool_reclaim_timeouts_total", kCounter,
    "Reclaim requests a busy worker did not serve within the reclaim wait (its objects "
    "stay out of reach until its next loop iteration)."};
inline constexpr MetricDef kPoolReclaimedObjectsTotal{
    "skbnf_pool_reclaimed_objects_total", kCounter,
    "Objects reclaimed from other cores' layers into the store."};

// ---- Strategies and swaps
inline constexpr MetricDef kStrategyInfo{"skbnf_strategy_info", kGauge,
                                         "The buffer strategy in force (value always 1)."};
inline constexpr MetricDef kStrategyEpoch{"skbnf_strategy_epoch", kGauge,
                                          "Epoch of the strategy in force."};
inline constexpr MetricDef kStrategySwapsTotal{"skbnf_strategy_swaps_total", kCounter,
                                               "Strategy swaps run through the API, by result."};
inline constexpr MetricDef kStrategySwapDurationSeconds{
    "skbnf_strategy_swap_duration_seconds", kHistogram,
    "Duration of strategy swaps, publish to retirement."};

// ---- Live tuning (server/tuner)
inline constexpr MetricDef kTuneRunning{"skbnf_tune_running", kGauge,
                                        "1 while a live strategy tune runs."};
inline constexpr MetricDef kTuneState{"skbnf_tune_state", kGauge,
                                      "1 for the tuner's current state."};
inline constexpr MetricDef kTuneCandidateInfo{
    "skbnf_tune_candidate_info", kGauge, "The strategy under test by the tuner (value always 1)."};
inline constexpr MetricDef kTuneRunsTotal{"skbnf_tune_runs_total", kCounter,
                                          "Strategy tunes ended, by outcome."};
inline constexpr MetricDef kTuneLastResultInfo{"skbnf_tune_last_result_info", kGauge,
                                               "Outcome of the last tune (value always 1)."};
inline constexpr MetricDef kTuneLastCyclesPerPacket{
    "skbnf_tune_last_cycles_per_packet", kGauge,
    "Median cycles per packet of each ranked candidate in the last tune."};
inline constexpr MetricDef kTuneLastStartTimestampSeconds{
    "skbnf_tune_last_start_timestamp_seconds", kGauge, "When the last tune started (unix time)."};
inline constexpr MetricDef kTuneLastEndTimestampSeconds{
    "skbnf_tune_last_end_timestamp_seconds", kGauge, "When the last tune ended (unix time)."};

// ---- The build
inline constexpr MetricDef kBuildInfo{"skbnf_build_info", kGauge,
                                      "Build of the running binary (value always 1)."};

// ---- The control API: changes (change_log.h) and limits (limits.h)
inline constexpr MetricDef kControlChangesTotal{
    "skbnf_control_changes_total", kCounter,
    "Attempts to change the data plane, by RPC (operation), result (ok, "
    "permission_denied, rolled_back, ...) and source (rpc, config, tune, "
    "console, lease)."};
inline constexpr MetricDef kControlRejectedTotal{
    "skbnf_control_rejected_total", kCounter,
    "Control API calls refused with RESOURCE_EXHAUSTED by a limit, by "
    "RPC and reason (streams_per_client, streams_total, interval, rate)."};
inline constexpr MetricDef kControlWatchStreams{"skbnf_control_watch_streams", kGauge,
                                                "WatchStats streams open now."};

// ---- TLS (tls_reload.h)
inline constexpr MetricDef kTlsCertificateExpiryTimestampSeconds{
    "skbnf_tls_certificate_expiry_timestamp_seconds", kGauge,
    "notAfter of the TLS certificate the gRPC listener serves (certificate=\"server\", "
    "--tls-cert) and of the earliest-expiring certificate of --tls-client-ca "
    "(certificate=\"client_ca\"), as Unix seconds; re-read every --tls-reload-interval"};

// ---- --config reload (server/ops/config_reload.h)
inline constexpr MetricDef kConfigReloadsTotal{
    "skbnf_config_reloads_total", kCounter,
    "Reloads of the --config file (inotify or SIGHUP) by result: ok (applied), "
    "error (refused whole, nothing applied), unchanged (nothing to apply)"};
inline constexpr MetricDef kConfigReloadRetriesTotal{
    "skbnf_config_reload_retries_total", kCounter,
    "Retries of a refused --config reload (backoff 1 s doubling to 32 s, 6 retries after each "
    "failure; the failures are skbnf_config_reloads_total{result=\"error\"})"};
inline constexpr MetricDef kConfigRollbackFailuresTotal{
    "skbnf_config_rollback_failures_total", kCounter,
    "Reloads whose half-applied changes could not all be put back (the log "
    "line names them); the next reload repairs the live route table"};
inline constexpr MetricDef kConfigLastReloadSuccessful{
    "skbnf_config_last_reload_successful", kGauge,
    "1 when the last reload of the --config file was applied (or had nothing to apply), 0 "
    "when it was refused"};
inline constexpr MetricDef kConfigLastReloadSuccessTimestampSeconds{
    "skbnf_config_last_reload_success_timestamp_seconds", kGauge,
    "Unix time of the last successful load of the --config file (start-up included)"};
inline constexpr MetricDef kConfigRestartRequired{
    "skbnf_config_restart_required", kGauge,
    "1 when the --config file changes a setting only a restart applies (mode, pools, rings, "
    "ports, workers, eal)"};
inline constexpr MetricDef kConfigWatched{
    "skbnf_config_watched", kGauge,
    "1 while skbnfd watches its --config file for changes (inotify, SIGHUP), 0 without one"};
inline constexpr MetricDef kConfigWatchPollsTotal{
    "skbnf_config_watch_polls_total", kCounter,
    "Polls of the --config watcher's inotify queue (one per 20 ms) by whether "
    "they found events (events) or not (quiet)"};

inline constexpr MetricDef kConfigDrift{
    "skbnf_config_drift", kGauge,
    "1 while the running state differs from the last applied --config file, by part (strategy: "
    "the strategy in force is not the file's; routes: the live route table is not the file's), "
    "e.g. after a change over the API; a restart would go back to the file. 0 otherwise and "
    "without --config"};

// Every family above.
inline constexpr std::array kAll = {&kPortRingMbufs,
                                    &kPortPacketsTotal,
                                    &kPortBytesTotal,
                                    &kPortDropsTotal,
                                    &kPortRxNombufTotal,
                                    &kCorePacketsPerSecond,
                                    &kWorkerPollsTotal,
                                    &kWorkerBusyPollsTotal,
                                    &kWorkerBusyRatio,
                                    &kWorkerPaused,
                                    &kWorkerParkedLoopsTotal,
                                    &kWorkerBusyCyclesTotal,
                                    &kWorkerBusyPacketsTotal,
                                    &kPoolAllocsTotal,
                                    &kPoolFreesTotal,
                                    &kPoolBulkTransfersTotal,
                                    &kPoolHostAllocsTotal,
                                    &kPoolHostFreesTotal,
                                    &kPoolAllocFailuresTotal,
                                    &kPoolStoreAllocsTotal,
                                    &kPoolStoreFreesTotal,
                                    &kPoolStoreLockAcquisitionsTotal,
                                    &kPoolDepotLockAcquisitionsTotal,
                                    &kPoolDepotLockWaitsTotal,
                                    &kWorkerTscHz,
                                    &kPacketLatencySeconds,
                                    &kLatencySampleEvery,
                                    &kWorkerIterationSeconds,
                                    &kWorkerIterationPackets,
                                    &kWorkerSlowIterationsTotal,
                                    &kWorkerSlowIterationSeconds,
                                    &kPortInfo,
                                    &kPortLinkUp,
                                    &kPortLinkSpeedBytesPerSecond,
                                    &kPortPmdPacketsTotal,
                                    &kPortPmdBytesTotal,
                                    &kPortPmdRxMissedPacketsTotal,
                                    &kPortPmdRxErrorsTotal,
                                    &kPortPmdTxErrorsTotal,
                                    &kPortPmdRxNombufTotal,
                                    &kPoolObjects,
                                    &kPoolPopulatedObjects,
                                    &kPoolHeldObjects,
                                    &kPoolUnaccountedObjects,
                                    &kPoolInflightAgeSeconds,
                                    &kPoolInflightUntrackedObjects,
                                    &kPoolTracking,
                                    &kPoolReclaimsTotal,
                                    &kPoolReclaimTimeoutsTotal,
                                    &kPoolReclaimedObjectsTotal,
                                    &kStrategyInfo,
                                    &kStrategyEpoch,
                                    &kStrategySwapsTotal,
                                    &kStrategySwapDurationSeconds,
                                    &kTuneRunning,
                                    &kTuneState,
                                    &kTuneCandidateInfo,
                                    &kTuneRunsTotal,
                                    &kTuneLastResultInfo,
                                    &kTuneLastCyclesPerPacket,
                                    &kTuneLastStartTimestampSeconds,
                                    &kTuneLastEndTimestampSeconds,
                                    &kBuildInfo,
                                    &kControlChangesTotal,
                                    &kControlRejectedTotal,
                                    &kControlWatchStreams,
                                    &kTlsCertificateExpiryTimestampSeconds,
                                    &kConfigReloadsTotal,
                                    &kConfigReloadRetriesTotal,
                                    &kConfigRollbackFailuresTotal,
                                    &kConfigLastReloadSuccessful,
                                    &kConfigLastReloadSuccessTimestampSeconds,
                                    &kConfigRestartRequired,
                                    &kConfigWatched,
                                    &kConfigWatchPollsTotal,
                                    &kConfigDrift};

}  // namespace metric
}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CORE_METRIC_FAMILIES_H_
