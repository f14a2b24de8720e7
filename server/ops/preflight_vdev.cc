// SPDX-License-Identifier: BSD-3-Clause
#include "server/ops/preflight_vdev.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace skbnf::preflight {

std::vector<std::string> VdevArgs(const std::vector<std::string>& eal) {
  std::vector<std::string> out;
  for (size_t i = 0; i < eal.size(); ++i) {
    if (eal[i] == "--vdev" && i + 1 < eal.size()) {
      out.push_back(eal[++i]);
    } else if (absl::StartsWith(eal[i], "--vdev=")) {
      out.push_back(eal[i].substr(7));
    }
  }
  return out;
}

namespace {

std::vector<std::string> VirtioUserArgs(const std::vector<std::string>& eal) {
  std::vector<std::string> virtio;  // vhost-user virtio_user vdevs, their full argument
  for (const std::string& v : VdevArgs(eal)) {
    if (!absl::StartsWith(v, "net_virtio_user") && !absl::StartsWith(v, "virtio_user")) continue;
    if (absl::StrContains(v, "path=/dev/vhost-")) continue;  // vhost-kernel / vhost-vdpa
    virtio.push_back(v);
  }
  return virtio;
}

std::string Names(const std::vector<std::string>& vdevs) {
  std::vector<std::string> names;
  for (const std::string& v : vdevs) names.push_back(v.substr(0, v.find(',')));
  return absl::StrJoin(names, ", ");
}

Finding CheckVdevMemory(const std::vector<std::string>& eal,
                        const std::vector<std::string>& virtio) {
  if (virtio.empty()) return {Severity::kOk, "vdev_memory", "no vhost-user virtio_user vdev"};
  auto has = [&](const char* flag) { return std::find(eal.begin(), eal.end(), flag) != eal.end(); };
  const std::string names = Names(virtio);
  if (has("--no-huge")) {
    return {Severity::kRisk, "vdev_memory",
            absl::StrCat(names,
                         ": vhost-user shares memory by file, and --no-huge memory has none; "
                         "drop --no-huge and add --single-file-segments (hugepages)")};
  }
  if (!has("--single-file-segments") && !has("--legacy-mem")) {
    return {Severity::kRisk, "vdev_memory",
            absl::StrCat(names,
                         ": vhost-user shares at most 8 memory regions with its backend and "
                         "without --single-file-segments every hugepage is one: add "
                         "--single-file-segments to the EAL arguments (or --legacy-mem); skbnfd "
                         "refuses to start the port otherwise")};
  }
  return {
      Severity::kOk, "vdev_memory",
      absl::StrCat(names, ": memory shareable (",
                   has("--single-file-segments") ? "--single-file-segments" : "--legacy-mem", ")")};
}

// net_memif with zero-copy=yes: the client parks refilled RX mbufs and sent TX mbufs in the
// shared rings, and DPDK 22.11's memif_dev_stop/memif_dev_close free none of them
// (drivers/net/memif/rte_eth_memif.c: queue release frees only the ring's mbuf array).
std::vector<Finding> CheckMemif(const std::vector<std::string>& eal) {
  std::vector<std::string> memif, zero_copy;
  for (const std::string& v : VdevArgs(eal)) {
    if (!absl::StartsWith(v, "net_memif")) continue;
    memif.push_back(v);
    if (absl::StrContains(v, "zero-copy=yes")) zero_copy.push_back(v);
  }
  if (memif.empty()) return {};  // the finding only where memif is used
  if (zero_copy.empty()) {
    return {{Severity::kOk, "vdev_memif", absl::StrCat(Names(memif), ": copy mode")}};
  }
  return {{Severity::kRisk, "vdev_memif",
           absl::StrCat(Names(zero_copy),
                        ": zero-copy=yes leaves the mbufs parked in memif's rings (up to 2 x "
                        "2^rsize per queue pair) out of the pool after the port closes, so the "
                        "exit audit fails and skbnfd exits 1: write zero-copy=no (copy mode, the "
                        "default; no hugepages needed)")}};
}

}  // namespace

std::vector<Finding> CheckVdevs(const std::vector<std::string>& eal) {
  const std::vector<std::string> virtio = VirtioUserArgs(eal);
  std::vector<Finding> out = {CheckVdevMemory(eal, virtio)};
  for (Finding& f : CheckMemif(eal)) out.push_back(std::move(f));
  if (virtio.empty()) return out;
  std::vector<std::string> small;
  for (const std::string& v : virtio) {
    if (!absl::StrContains(v, "queue_size=")) small.push_back(v);
  }
  if (small.empty()) {
    out.push_back(
        {Severity::kOk, "vdev_queue_size", absl::StrCat(Names(virtio), ": queue_size set")});
  } else {
    out.push_back(
        {Severity::kRisk, "vdev_queue_size",
         absl::StrCat(Names(small),
                      ": no queue_size=, so the rings are virtio_user's default 256 descriptors "
                      "(--rx-ring does not change them) and the vhost-user peer drops "
                      "(OVS: ovs_tx_failure_drops) whenever the worker falls 256 frames behind: "
                      "add queue_size=1024 to the vdev")});
  }
  return out;
}

}  // namespace skbnf::preflight
