// SPDX-License-Identifier: BSD-3-Clause
// MetricsCollector: the Prometheus view of a Backend, built at scrape time.
//
// prometheus-cpp's Exposer calls Collect() on its own HTTP thread for every scrape; Collect()
// takes one Backend::GetStats() snapshot (plain loads of the per-core counters) and one
// Backend::ListPorts() (link and PMD counters) and turns them into metric families; it takes no
// lock that a strategy swap holds. Nothing on the packet path knows prometheus-cpp exists, and
// there is no registry of live Counter objects to keep in sync: the data plane's counters are the
// truth.
//
// Metrics (prefix skbnf_, base units, counters end in _total). Each family's name, type and help
// are defined once, in server/core/metric_families.h (metric::k*); this list adds their labels:
//   skbnf_port_packets_total{core,port,direction}     counter  rx/tx packets per core and port
//   skbnf_port_bytes_total{core,port,direction}       counter
//   skbnf_port_drops_total{core,port,reason}          counter
//   skbnf_port_rx_nombuf_total{core,port}             counter  RX refills without a buffer (only
//                                                              where the core refills one port)
//   skbnf_port_info{port,name,driver,device,mac}      gauge    always 1
//   skbnf_port_link_up{port}                          gauge    1 up, 0 down (absent: unknown)
//   skbnf_port_link_speed_bytes_per_second{port}      gauge    0: unknown
//   skbnf_port_pmd_packets_total{port,direction}      counter  the PMD's own counters
//   skbnf_port_pmd_bytes_total{port,direction}        counter  (rte_eth_stats): ipackets, ...
//   skbnf_port_pmd_rx_missed_packets_total{port}      counter  imissed (RX ring full)
//   skbnf_port_pmd_rx_errors_total{port}              counter  ierrors
//   skbnf_port_pmd_tx_errors_total{port}              counter  oerrors
//   skbnf_port_pmd_rx_nombuf_total{port}              counter  rx_nombuf (PMD allocation fails)
//   skbnf_port_ring_mbufs{port,direction}             gauge    mbufs in the port's RX/TX rings,
//                                                              where the PMD tells (AF_XDP); no
//                                                              sample for a port that does not
//   skbnf_core_packets_per_second{core,direction}     gauge    over the sampler's window
//   skbnf_worker_polls_total{core}                    counter  poll-loop iterations
//   skbnf_worker_busy_polls_total{core}               counter  iterations with packets
//   skbnf_worker_busy_ratio{core}                     gauge    busy/polls over the window
//   skbnf_worker_paused{core}                         gauge    1 while parked
//   skbnf_worker_parked_loops_total{core}             counter  loop iterations spent parked:
//                                                              moves while a paused worker is
//                                                              alive, never while it polls
//   skbnf_worker_busy_cycles_total{core}              counter  TSC cycles of the polls that
//                                                              received packets
//   skbnf_worker_busy_packets_total{core}             counter  the packets of those polls
//   skbnf_worker_tsc_hz                               gauge    TSC frequency; cycles per packet:
//     rate(skbnf_worker_busy_cycles_total[1m]) / rate(skbnf_worker_busy_packets_total[1m])
//   skbnf_packet_latency_seconds{core,port}          histogram sampled packets' latency, RX burst
//                                                              to TX burst, per worker and RX port
//                                                              (le: powers of two of TSC cycles,
//                                                              2^7..2^31, in seconds: exact HDR
//                                                              bucket bounds; common/worker_perf.h)
//   skbnf_latency_sample_every                        gauge    1 in N RX bursts timed; 0: off
//   skbnf_worker_iteration_seconds{core}              histogram poll-loop iterations by duration
//                                                              (le: 2^10..2^36 cycles in seconds)
//   skbnf_worker_iteration_packets{core}              histogram by packets received (le: 0, 1,
//                                                              2, 4, ..., 32, 64, ..., 4096)
//   skbnf_worker_slow_iterations_total{core}          counter  iterations over the threshold
//   skbnf_worker_slow_iteration_seconds               gauge    that threshold
//   p99 over 5 minutes, per core and port:
//     histogram_quantile(0.99,
//       sum by (core, port, le) (rate(skbnf_packet_latency_seconds_bucket[5m])))
//   (layer: a row of the layer catalogue, pool::LayerCatalog(), by its name and kIndex; a
//    collector made over another list's catalogue, a test's, exports its layers with no edit here)
//   skbnf_pool_allocs_total{core,layer,result}        counter  a layer's allocs: hit/miss
//   skbnf_pool_frees_total{core,layer,result}         counter  a layer's frees: hit/miss
//   skbnf_pool_bulk_transfers_total{core,layer}       counter
//   skbnf_pool_host_allocs_total{core}                counter  the host's allocs (objects handed
//                                                              out; Stats' host_allocs)
//   skbnf_pool_host_frees_total{core}                 counter  the host's frees (host_frees)
//   skbnf_pool_alloc_failures_total{core}             counter
//   skbnf_pool_store_allocs_total{core}, _store_frees_total{core}
//   skbnf_pool_store_lock_acquisitions_total{core}, _depot_lock_acquisitions_total{core}
//   skbnf_pool_depot_lock_waits_total{core}          counter  depot acquisitions that spun on
//                                                              another core's hold
//   skbnf_pool_objects{state}                         gauge    in_store|in_depots|in_flight|
//                                                              <layer> (PoolObjects' words)
//   skbnf_pool_populated_objects                      gauge
//   skbnf_strategy_info{spec}                         gauge    always 1
//   skbnf_strategy_epoch                              gauge
//   skbnf_strategy_swaps_total{result}                counter  ok|rolled_back|failed (via API)
//   skbnf_strategy_swap_duration_seconds              histogram
//   skbnf_build_info{version,git_commit,compiler,build_type}  gauge 1
// Live strategy tuning (server/tuner/tuner.h), when the collector is given the tuner:
//   skbnf_tune_running                                gauge    1 while a tune runs
//   skbnf_tune_state{state}                           gauge    1 for the current state: idle |
//                                                              baseline | settling | measuring |
//                                                              finishing; 0 for the others
//   skbnf_tune_candidate_info{spec}                   gauge    1: the candidate under test
//                                                              (absent when none)
//   skbnf_tune_runs_total{outcome}                    counter  tunes ended, by outcome
//   skbnf_tune_last_result_info{outcome,incumbent,winner,final_spec}  gauge 1 (after a tune)
//   skbnf_tune_last_cycles_per_packet{spec}           gauge    last tune's median per ranked
//                                                              candidate
//   skbnf_tune_last_start_timestamp_seconds, skbnf_tune_last_end_timestamp_seconds  gauge
//                                                              (unix time)
//   Tune windows as Grafana annotations (Prometheus data source): a region while a tune runs,
//     skbnf_tune_running{instance=~"$instance"} > 0
//   and its result when it ends (title "tune {{outcome}}", text "{{winner}} -> {{final_spec}}"),
//     skbnf_tune_last_result_info{instance=~"$instance"} and on (instance, job)
//       (time() - skbnf_tune_last_end_timestamp_seconds{instance=~"$instance"} < 60)
// core="other" is every thread that is not a worker (the main lcore filling RX rings at port
// start, control threads): they go straight to the store.
// On a TLS listener, its own collectable (server/control/tls_reload.h, TlsCertificateWatch):
//   skbnf_tls_certificate_expiry_timestamp_seconds{certificate}  gauge  notAfter (unix time) of
//                                                              server (--tls-cert) | client_ca
//                                                              (earliest in --tls-client-ca) |
//                                                              metrics (--metrics-tls-cert) |
//                                                              metrics_client_ca
#ifndef SKBNF_SERVER_METRICS_METRICS_H_
#define SKBNF_SERVER_METRICS_METRICS_H_

#include <vector>

#include "dataplane/pool/layer_facts.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "server/core/backend.h"
#include "server/core/stats_sampler.h"
#include "server/core/swap_metrics.h"
#include "server/tuner/tuner.h"

namespace skbnf::control {

class MetricsCollector : public prometheus::Collectable {
 public:
  // `layers`: the catalogue whose layers the per-layer families name (the production one; a
  // test's list its own, e.g. ToyLayers::Catalog()).
  MetricsCollector(const Backend& backend, const StatsSampler& sampler, const SwapMetrics& swaps,
                   const Tuner* tuner = nullptr,
                   const std::vector<pool::CatalogEntry>& layers = pool::LayerCatalog())
      : backend_(backend),
        sampler_(sampler),
        swaps_(swaps),
        tuner_(tuner),
        layers_(layers),
        pool_(backend.GetInfo().pool) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const Backend& backend_;
  const StatsSampler& sampler_;
  const SwapMetrics& swaps_;
  const Tuner* const tuner_;  // nullptr: no tune metrics
  const std::vector<pool::CatalogEntry>& layers_;
  const PoolInfo pool_;       // fixed for the daemon's life
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_METRICS_METRICS_H_
