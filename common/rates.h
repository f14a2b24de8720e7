// SPDX-License-Identifier: BSD-3-Clause
// Rates: the one computation of a per-second rate from two readings of a counter, and its one
// human form ("1.25M", "3.4k"), used by the API (GetStats, WatchStats), /metrics, skbnfd's
// console and skbnfctl; and the one computation of cycles per packet from two readings of a
// worker's busy-cycle and busy-packet counters (also used by the strategy tuner).
#ifndef SKBNF_COMMON_RATES_H_
#define SKBNF_COMMON_RATES_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace skbnf::control {

// (now - before) / seconds; 0 when the window is empty or the counter went backwards (e.g. a
// data-plane restart).
double Rate(uint64_t now, uint64_t before, double seconds);
double Seconds(std::chrono::steady_clock::duration d);
// (cycles_now - cycles_before) / (packets_now - packets_before); 0 when no packet was received
// in between or a counter went backwards.
double CyclesPerPacket(uint64_t cycles_now, uint64_t cycles_before, uint64_t packets_now,
                       uint64_t packets_before);
// The share of a worker's polls that received packets between two readings: 0 when no poll
// ran in between or a counter went backwards, at most 1. (A reading takes polls and busy_polls
// one after the other while the worker adds to both, so one reading can be torn by a poll.)
double BusyRatio(uint64_t busy_now, uint64_t busy_before, uint64_t polls_now,
                 uint64_t polls_before);
// 1234567 -> "1.23M", 12345 -> "12.3k", 12 -> "12".
std::string HumanRate(double per_second);

}  // namespace skbnf::control

#endif  // SKBNF_COMMON_RATES_H_
