// SPDX-License-Identifier: BSD-3-Clause
// ControlService::GetBufferAges: the latest buffer census (server/core/buffer_ages.h), a read:
// the read role, a read slot, no mutation lock, and no census of its own (the StatsSampler
// takes them).
#include <chrono>
#include <limits>

#include "absl/strings/str_cat.h"
#include "server/control/control_service.h"

namespace skbnf::control {
namespace {

void SetSite(const pool::Site& site, v1::AllocationSite* out) {
  out->set_site(std::string(SiteName(site)));
  if (site.kind == pool::SiteKind::kWorker || site.kind == pool::SiteKind::kApplication) {
    out->set_core(static_cast<uint32_t>(site.core));
  }
  if (site.kind == pool::SiteKind::kWorker && site.rx_port >= 0) {
    out->set_rx_port(static_cast<uint32_t>(site.rx_port));
  }
}

}  // namespace

grpc::Status ControlService::GetBufferAges(grpc::ServerContext* ctx,
                                           const v1::GetBufferAgesRequest* req,
                                           v1::BufferAges* resp) {
  CallLimits::Slot slot;
  if (grpc::Status a = Reading(ctx, "GetBufferAges", &slot); !a.ok()) return a;
  if (req->oldest() > kKeepOldest) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("oldest: ", req->oldest(), " is out of range [0, ", kKeepOldest, "]"));
  }
  constexpr uint64_t kMaxOlderThanMs = uint64_t{366} * 24 * 3600 * 1000;
  if (req->older_than_ms() > kMaxOlderThanMs) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("older_than_ms: ", req->older_than_ms(),
                                     " is out of range [0, ", kMaxOlderThanMs, "] (a year)"));
  }
  const pool::StrategySpec spec = backend_.GetStrategy();
  if (!spec.track) {  // (a census of the last tracking period may still be kept: not shown)
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat("tracking is off: the strategy '", spec.ToString(),
                                     "' has no 'track' modifier (skbnfctl strategy set '",
                                     spec.ToString(), ",track')"));
  }
  std::shared_ptr<const BufferAges> a = sampler_.Ages();
  if (a == nullptr) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        absl::StrCat("no census yet: one is taken every ",
                                     sampler_.census_every().count(), " ms while tracking"));
  }
  resp->set_taken_unix_ms(
      std::chrono::duration_cast<std::chrono::milliseconds>(a->taken.time_since_epoch()).count());
  resp->set_census_us(static_cast<uint64_t>(a->took.count()));
  resp->set_populated(a->populated);
  resp->set_in_flight(a->in_flight);
  resp->set_untracked(a->untracked);
  resp->set_tracked(a->tracked);
  resp->set_census_every_ms(static_cast<uint64_t>(sampler_.census_every().count()));
  for (int c : a->unanswered_cores) resp->add_unanswered_cores(static_cast<uint32_t>(c));
  for (const SiteAges& s : a->sites) {
    v1::SiteAges* ps = resp->add_sites();
    SetSite(s.site, ps->mutable_site());
    ps->set_objects(s.objects);
    ps->set_sum_seconds(s.sum_seconds);
    ps->set_max_seconds(s.max_seconds);
    uint64_t below = 0;
    for (size_t i = 0; i < s.counts.size(); ++i) {
      below += s.counts[i];
      v1::AgeBucket* b = ps->add_buckets();
      b->set_le_seconds(i < kAgeBucketsSeconds.size() ? kAgeBucketsSeconds[i]
                                                      : std::numeric_limits<double>::infinity());
      b->set_objects(below);
    }
  }
  const double older_than = static_cast<double>(req->older_than_ms()) / 1000;
  for (const AgedObject& o : a->oldest) {
    if (static_cast<uint32_t>(resp->oldest_size()) >= req->oldest()) break;
    if (o.age_seconds < older_than) break;  // oldest first: the rest are younger
    v1::AgedBuffer* b = resp->add_oldest();
    b->set_address(o.address);
    b->set_age_seconds(o.age_seconds);
    SetSite(o.site, b->mutable_site());
  }
  return grpc::Status::OK;
}

}  // namespace skbnf::control
