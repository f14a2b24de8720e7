// SPDX-License-Identifier: BSD-3-Clause
#include "server/ops/preflight_vdev.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace skbnf::preflight {

namespace {

std::vector<std::string> VirtioUserArgs(const std::vector<std::string>& eal) {
  std::vector<std::string> virtio;  // vhost-user virtio_user vdevs, their full argument
  for (size_t i = 0; i < eal.size(); ++i) {
    std::string v;
    if (eal[i] == "--vdev" && i + 1 < eal.size()) {
      v = eal[++i];
    } else if (absl::StartsWith(eal[i], "--vdev=")) {
      v = eal[i].substr(7);
    } else {
      continue;
    }
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

}  // namespace

std::vector<Finding> CheckVdevs(const std::vector<std::string>& eal) {
  const std::vector<std::string> virtio = VirtioUserArgs(eal);
  std::vector<Finding> out = {CheckVdevMemory(eal, virtio)};
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
