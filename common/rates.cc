// SPDX-License-Identifier: BSD-3-Clause
#include "common/rates.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace skbnf::control {

double Rate(uint64_t now, uint64_t before, double seconds) {
  if (seconds <= 0 || now < before) return 0;
  return static_cast<double>(now - before) / seconds;
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

double CyclesPerPacket(uint64_t cycles_now, uint64_t cycles_before, uint64_t packets_now,
                       uint64_t packets_before) {
  if (packets_now <= packets_before || cycles_now < cycles_before) return 0;
  return static_cast<double>(cycles_now - cycles_before) /
         static_cast<double>(packets_now - packets_before);
}

double BusyRatio(uint64_t busy_now, uint64_t busy_before, uint64_t polls_now,
                 uint64_t polls_before) {
  if (polls_now <= polls_before || busy_now < busy_before) return 0;
  return std::min(1.0, static_cast<double>(busy_now - busy_before) /
                           static_cast<double>(polls_now - polls_before));
}

std::string HumanRate(double v) {
  if (v >= 1e6) return absl::StrFormat("%.2fM", v / 1e6);
  if (v >= 1e3) return absl::StrFormat("%.1fk", v / 1e3);
  return absl::StrFormat("%.0f", v);
}

}  // namespace skbnf::control
