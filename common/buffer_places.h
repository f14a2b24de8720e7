// SPDX-License-Identifier: BSD-3-Clause
// BufferPlaces: where every buffer out of the pool is (issue 32 item 1), as the engine counts
// it (dataplane/dpdk/forward.cc, "Where every buffer is"; Engine::Places) and the control
// plane shows it (skbnf.v1 BufferPlaces, `skbnfctl buffers`, /skbnf/buffers). No DPDK type.
#ifndef SKBNF_COMMON_BUFFER_PLACES_H_
#define SKBNF_COMMON_BUFFER_PLACES_H_

#include <cstdint>
#include <string>
#include <vector>

namespace skbnf::dpdk {

// Where every buffer out of the pool is, from the counters the worker keeps around its PMD
// calls (forward.cc, "Where every buffer is"): each port's RX and TX rings, each worker's hands,
// the other threads. Signed: read one counter after the other while the workers run, a figure
// may be off by a burst (Audit's copy is taken with the workers parked: exact). skbnf pools
// only (has = false for ring_mp_mc).
struct BufferPlaces {
  bool has = false;
  struct Port {
    uint16_t id = 0;
    std::string name;
    // Handed to the PMD to receive into, not yet received; sent, not yet freed by the PMD. A
    // PMD whose RX hands back what a TX queue took (net_ring: one ring per queue pair) shows
    // them as the TX ring's and minus as many in the RX ring.
    int64_t rx_ring = 0, tx_ring = 0;
  };
  std::vector<Port> ports;  // active ports, config order
  struct Core {
    unsigned lcore = 0;
    int64_t in_hands = 0;  // received and not yet sent or freed (0 while parked)
  };
  std::vector<Core> cores;  // workers
  // Non-worker threads beyond the ports' set-up, start and stop on the control thread: an
  // application's lcore, a PMD's own thread (e.g. an RX ring refilled after a vhost-user
  // reconnection), the engine's own frees at stop (net_ring's rings drained).
  int64_t other_threads = 0;
  int64_t total = 0;  // the sum: every object the host holds (populated - available)
};

}  // namespace skbnf::dpdk

#endif  // SKBNF_COMMON_BUFFER_PLACES_H_
