#include "server/preflight_vdev.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace skbnf::preflight {

Finding CheckVdevMemory(const std::vector<std::string>& eal) {
  std::vector<std::string> virtio;  // vhost-user virtio_user vdevs, by name
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
    virtio.push_back(v.substr(0, v.find(',')));
  }
  if (virtio.empty()) return {Severity::kOk, "vdev_memory", "no vhost-user virtio_user vdev"};
  auto has = [&](const char* flag) { return std::find(eal.begin(), eal.end(), flag) != eal.end(); };
  const std::string names = absl::StrJoin(virtio, ", ");
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

}  // namespace skbnf::preflight
