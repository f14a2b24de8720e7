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

// skbnf.v1.BufferPlaces (issue 32 item 1): the pool's free places (`gauges`; in_flight =
// populated - them) and where the host says the rest is (`places`). `cores`: each worker's
// own layers (a live read); nullptr for an audit's, whose parked workers flushed theirs.
// `ports` (ListPorts): the PMD's own ring counts where it tells, beside the counted ones.
// unaccounted = in_flight - every counted place.
void FillBufferPlaces(const dpdk::BufferPlaces& places, bool exact, const PoolGauges& gauges,
                      const std::vector<CoreStats>* cores, const std::vector<PortInfo>& ports,
                      v1::BufferPlaces* out);

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CONTROL_STATS_CONVERT_H_
