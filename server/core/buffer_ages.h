// SPDX-License-Identifier: BSD-3-Clause
// BufferAges: since when, and who took it (issue 32 item 2) — a pool census (dataplane/pool/
// track.h) summarised for readers: the in-flight objects' ages as a histogram per allocation
// site, and the oldest of them with their sites and addresses.
//
// Who takes a census. A census empties every per-core layer into the store (a reclaim's flush)
// and reads a word of every in-flight object, so no reader triggers one: the StatsSampler takes
// one every --buffer-census-every while the strategy carries `track`, and every reader (the
// GetBufferAges RPC, /metrics' skbnf_pool_inflight_age_seconds, skbnfctl buffers --ages) reads
// the latest, with its time. Tracking off: there is none (readers say so).
//
// The summary itself (sites, buckets, Summarise) is the buffer core's (dataplane/pool/track.h):
// the plugin's telemetry in a foreign application summarises the same way.
#ifndef SKBNF_SERVER_CORE_BUFFER_AGES_H_
#define SKBNF_SERVER_CORE_BUFFER_AGES_H_

#include "dataplane/pool/track.h"

namespace skbnf::control {

using pool::AgedObject;
using pool::BufferAges;
using pool::kAgeBucketsSeconds;
using pool::kKeepOldest;
using pool::SiteAges;
using pool::SiteName;
using pool::StandingSites;
using pool::Summarise;

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CORE_BUFFER_AGES_H_
