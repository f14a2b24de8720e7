// SPDX-License-Identifier: BSD-3-Clause
// /skbnf/ages for the plugin's pools (plugin_telemetry.h). DPDK 22.11 lib/telemetry/
// rte_telemetry.h: rte_telemetry_register_cmd(cmd, fn, help) (fn(cmd, params, data) fills
// `data`, 0 or a negative errno: null); rte_tel_data_start_dict, rte_tel_data_add_dict_u64 /
// _int / _string / _container (a container is a dict or an array of numbers or strings,
// rte_tel_data_alloc'd, freed with its parent when keep is 0).
#include "dataplane/dpdk/plugin_telemetry.h"

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_telemetry.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dataplane/pool/mutex.h"
#include "dataplane/pool/track.h"

namespace skbnf::dpdk::driver {
namespace {

constexpr std::chrono::milliseconds kCensusWait{20};
constexpr std::chrono::seconds kCensusEvery{1};
constexpr double kOldSeconds = 300;  // the SkbnfBuffersLeaking alert's "old" (a bucket bound)

struct Listed {
  DriverPool* dp = nullptr;
  bool has_ages = false;
  std::chrono::steady_clock::time_point taken;
  pool::BufferAges ages;
};

// Never destroyed: DPDK's telemetry threads may call the command until the process exits.
struct Registry {
  pool::Mutex mu;  // held for a whole reply: a pool is not destroyed under a census
  std::vector<Listed> pools ABSL_GUARDED_BY(mu);
  bool registered ABSL_GUARDED_BY(mu) = false;
};
Registry& GetRegistry() {
  static Registry* r = new Registry;
  return *r;
}

// Moves `child` (nullptr: DPDK had no memory for it) into `parent` under `name`; false if not.
bool AddContainer(rte_tel_data* parent, const std::string& name, rte_tel_data* child) {
  if (child == nullptr) return false;
  if (rte_tel_data_add_dict_container(parent, name.c_str(), child, 0) != 0) {
    rte_tel_data_free(child);
    return false;
  }
  return true;
}
// A dict container under `name` in `parent` (nullptr when DPDK has no memory for it).
rte_tel_data* AddDict(rte_tel_data* parent, const std::string& name) {
  rte_tel_data* d = rte_tel_data_alloc();
  if (d != nullptr) rte_tel_data_start_dict(d);
  return AddContainer(parent, name, d) ? d : nullptr;
}

std::string SiteKey(const pool::Site& s) {
  std::string key(pool::SiteName(s));
  if (s.kind == pool::SiteKind::kWorker || s.kind == pool::SiteKind::kApplication) {
    absl::StrAppend(&key, "/", s.core);
  }
  if (s.rx_port >= 0) absl::StrAppend(&key, "/", s.rx_port);
  return key;
}

void AddSite(rte_tel_data* sites, const pool::SiteAges& s) {
  rte_tel_data* d = AddDict(sites, SiteKey(s.site));
  if (d == nullptr) return;
  const bool has_core =
      s.site.kind == pool::SiteKind::kWorker || s.site.kind == pool::SiteKind::kApplication;
  rte_tel_data_add_dict_string(d, "site", std::string(pool::SiteName(s.site)).c_str());
  rte_tel_data_add_dict_int(d, "core", has_core ? s.site.core : -1);
  rte_tel_data_add_dict_int(d, "port", s.site.rx_port);
  rte_tel_data_add_dict_u64(d, "objects", s.objects);
  // Seconds as decimal text ("12.5"): 22.11's dict has no floating-point value.
  rte_tel_data_add_dict_string(d, "max_seconds", absl::StrCat(s.max_seconds).c_str());
  rte_tel_data_add_dict_string(d, "sum_seconds", absl::StrCat(s.sum_seconds).c_str());
  // The bounds as text ("+Inf" last) and the cumulative counts, two arrays of one order: 22.11
  // refuses '.' and '+' in a dict key.
  rte_tel_data* le = rte_tel_data_alloc();
  rte_tel_data* buckets = rte_tel_data_alloc();
  if (le != nullptr) rte_tel_data_start_array(le, RTE_TEL_STRING_VAL);
  if (buckets != nullptr) rte_tel_data_start_array(buckets, RTE_TEL_U64_VAL);
  uint64_t below = 0, young = 0;
  for (size_t i = 0; i < pool::kAgeBucketsSeconds.size(); ++i) {
    below += s.counts[i];
    if (pool::kAgeBucketsSeconds[i] == kOldSeconds) young = below;
    if (le != nullptr)
      rte_tel_data_add_array_string(le, absl::StrCat(pool::kAgeBucketsSeconds[i]).c_str());
    if (buckets != nullptr) rte_tel_data_add_array_u64(buckets, below);
  }
  if (le != nullptr) rte_tel_data_add_array_string(le, "+Inf");
  if (buckets != nullptr) rte_tel_data_add_array_u64(buckets, s.objects);
  AddContainer(d, "le", le);
  AddContainer(d, "buckets", buckets);
  rte_tel_data_add_dict_u64(d, "older_than_300s", s.objects - young);
}

// The sites listed even with nothing in flight, so that their series stay (and read 0 when
// the holder lets go) rather than vanish: each EAL lcore's (every one is a foreign owner, its
// objects stamped "application": skbnf_mempool.cc, RegisterForeignLcores) and "other".
std::vector<pool::Site> StandingSites() {
  std::vector<pool::Site> out;
  unsigned lc;
  RTE_LCORE_FOREACH(lc) {
    if (lc < static_cast<unsigned>(pool::kMaxCores)) {
      out.push_back(pool::Site{pool::SiteKind::kApplication, static_cast<int>(lc), -1});
    }
  }
  out.push_back(pool::Site{pool::SiteKind::kOther, -1, -1});
  return out;
}

void AddPool(rte_tel_data* out, Listed& l) {
  pool::Pool& p = *l.dp->pool;
  rte_tel_data* d = AddDict(out, l.dp->mp->name);
  if (d == nullptr) return;
  const bool tracking = p.strategy().track;
  rte_tel_data_add_dict_int(d, "tracking", tracking ? 1 : 0);
  if (!tracking) return;
  const auto now = std::chrono::steady_clock::now();
  if (!l.has_ages || now - l.taken >= kCensusEvery) {
    absl::StatusOr<pool::InFlightCensus> census = p.Census(kCensusWait);
    if (!census.ok()) {
      rte_tel_data_add_dict_string(d, "error", std::string(census.status().message()).c_str());
      return;
    }
    census->tsc_hz = rte_get_tsc_hz();
    l.ages = pool::Summarise(*census, StandingSites());
    l.taken = now;
    l.has_ages = true;
  }
  const pool::BufferAges& a = l.ages;
  rte_tel_data_add_dict_u64(d, "populated", a.populated);
  rte_tel_data_add_dict_u64(d, "in_flight", a.in_flight);
  rte_tel_data_add_dict_u64(d, "untracked", a.untracked);
  rte_tel_data_add_dict_u64(d, "tracked", a.tracked);
  rte_tel_data* sites = AddDict(d, "sites");
  if (sites == nullptr) return;
  for (const pool::SiteAges& s : a.sites) AddSite(sites, s);
}

int Ages(const char*, const char*, rte_tel_data* out) {
  Registry& r = GetRegistry();
  pool::MutexLock lock(&r.mu);
  rte_tel_data_start_dict(out);
  for (Listed& l : r.pools) AddPool(out, l);
  return 0;
}

}  // namespace

void AddTelemetryPool(DriverPool& dp) {
  Registry& r = GetRegistry();
  pool::MutexLock lock(&r.mu);
  Listed l;
  l.dp = &dp;
  r.pools.push_back(std::move(l));
  if (r.registered || rte_eal_process_type() != RTE_PROC_PRIMARY) return;
  r.registered = true;  // once: a refused command is not asked again
  const int rc = rte_telemetry_register_cmd(
      "/skbnf/ages", &Ages,
      "Ages of the objects in flight of each skbnf pool, by allocation site (strategies with "
      "'track'). No parameters");
  if (rc != 0) {
    std::fprintf(stderr, "skbnf mempool: rte_telemetry_register_cmd(/skbnf/ages): %d\n", rc);
  }
}

void RemoveTelemetryPool(const DriverPool& dp) {
  Registry& r = GetRegistry();
  pool::MutexLock lock(&r.mu);
  std::erase_if(r.pools, [&](const Listed& l) { return l.dp == &dp; });
}

}  // namespace skbnf::dpdk::driver
