// SPDX-License-Identifier: BSD-3-Clause
#include "server/control/config_diff.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace skbnf::control {

std::string ConfigDrift::Summary() const {
  std::vector<std::string> parts;
  if (strategy) {
    parts.push_back(absl::StrCat("strategy ", running_strategy, " (file: ", file_strategy, ")"));
  }
  if (routes_differ()) {
    size_t extra = 0;
    for (const RouteDrift& r : routes) extra += r.file ? 0 : 1;
    parts.push_back(absl::StrCat("routes: ", extra, " not in the file, ", routes.size() - extra,
                                 " of the file's missing or different"));
  }
  return absl::StrJoin(parts, "; ");
}

void ConfigDriftSlot::Set(ConfigDriftSource source) {
  absl::WriterMutexLock l(&mu_);
  source_ = std::move(source);
}

absl::StatusOr<ConfigDrift> ConfigDriftSlot::Get() const {
  absl::ReaderMutexLock l(&mu_);
  if (!source_) {
    return absl::FailedPreconditionError(
        "skbnfd runs without --config: there is no config file to compare the running state "
        "with");
  }
  return source_();
}

}  // namespace skbnf::control
