// SPDX-License-Identifier: BSD-3-Clause
// --native-twin=FILE: skbnf's pool against DPDK's cached pool inside ONE skbnfd (issue 33 item 1,
// bench/interleave.py's `native` arm), so that both sides of a comparison run in the same speed
// mode of the machine (BENCHMARKS.md "Speed modes").
//
// With the flag, every polled RX queue gets a twin on DPDK's ring_mp_mc pool with an lcore cache
// of --mbuf-cache (default 256), as many mbufs as the skbnf pool (EngineConfig::native_twin says
// which PMDs fit: queues with their own traffic, e.g. net_null, net_pcap with one rx_pcap per
// queue). The workers poll one side at a time: FILE says which. skbnfd's main loop looks at it
// every 20 ms; when it changed, its first word is taken: `skbnf` (the default, also while the
// file is missing) or `native`. Anything else is said on stderr and changes nothing. Each switch
// is a line on stderr ("the workers poll the native side (ring_mp_mc cache=256)"); GetStats'
// spec stays the skbnf side's strategy, and its per-core pool counters (host_allocs) stand still
// while the native side is polled: what bench/interleave.py checks after each switch.
//
// Why a file and not an RPC: it is a benchmark knob, off unless skbnfd was started for it, and
// the side switch must not need a role, a client or a connection in the middle of a measurement.
// The strategy of the skbnf side still changes by SetStrategy (the interleave's other arms).
// The twin doubles the pool's memory.
#ifndef SKBNF_SERVER_DAEMON_NATIVE_TWIN_H_
#define SKBNF_SERVER_DAEMON_NATIVE_TWIN_H_

#include <sys/stat.h>

#include <string>

namespace skbnf::dpdk {
class Engine;
}

namespace skbnf::control {

bool NativeTwinRequested();  // --native-twin given

// Follows --native-twin's file from the main loop (no-op without the flag).
class NativeTwinSwitch {
 public:
  // Takes the file's side at once (before the workers start: the first packet is on it).
  explicit NativeTwinSwitch(dpdk::Engine& engine);
  void Tick(dpdk::Engine& engine);

 private:
  std::string path_;
  bool seen_ = false;  // the file existed at the last look
  struct timespec mtime_ = {};
  off_t size_ = -1;
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_DAEMON_NATIVE_TWIN_H_
