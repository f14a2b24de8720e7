// Rates: the one computation of a per-second rate from two readings of a counter, and its one
// human form ("1.25M", "3.4k"), used by the API (GetStats, WatchStats), /metrics, skbnfd's
// console and skbnfctl.
#ifndef SKBNF_SERVER_RATES_H_
#define SKBNF_SERVER_RATES_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace skbnf::control {

// (now - before) / seconds; 0 when the window is empty or the counter went backwards (e.g. a
// data-plane restart).
double Rate(uint64_t now, uint64_t before, double seconds);
double Seconds(std::chrono::steady_clock::duration d);
// 1234567 -> "1.23M", 12345 -> "12.3k", 12 -> "12".
std::string HumanRate(double per_second);

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_RATES_H_
