// SPDX-License-Identifier: BSD-3-Clause
// Stats shaping: a Backend StatsSnapshot (counters) -> skbnf.v1.Stats (counters plus rates over
// a window against an earlier snapshot, from common/rates.h). Used by GetStats and WatchStats.
#ifndef SKBNF_SERVER_CONTROL_STATS_CONVERT_H_
#define SKBNF_SERVER_CONTROL_STATS_CONVERT_H_

#include <string>
#include <vector>

#include "server/core/backend.h"
#include "skbnf/v1/control.pb.h"

namespace skbnf::control {

// Fills `out` from `now`, with rates against `before` (when given and older). `cores` empty:
// every core. `lcores` (Info::lcores) gives each core's lcore id (CoreStats.lcore).
void FillStats(const StatsSnapshot& now, const StatsSnapshot* before, const std::string& spec,
               uint64_t epoch, const std::vector<int>& cores, const std::vector<LcoreInfo>& lcores,
               v1::Stats* out);

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CONTROL_STATS_CONVERT_H_
