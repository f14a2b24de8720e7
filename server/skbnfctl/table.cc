// SPDX-License-Identifier: BSD-3-Clause
#include "server/skbnfctl/table.h"

#include <algorithm>

#include "absl/strings/str_join.h"

namespace skbnf::ctl {

namespace v1 = skbnf::v1;

void Table::Print(std::ostream& out, const std::string& indent) const {
  std::vector<size_t> w;
  for (const auto& r : rows_) {
    for (size_t i = 0; i < r.size(); ++i) {
      if (w.size() <= i) w.push_back(0);
      w[i] = std::max(w[i], r[i].size());
    }
  }
  for (const auto& r : rows_) {
    std::string line = indent;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(w[i] - r[i].size() + 2, ' ');
    }
    out << line << "\n";
  }
}

std::string Yes(bool b) { return b ? "yes" : "no"; }

std::string LayerName(int l) {
  switch (l) {
    case v1::LAYER_LCACHE:
      return "lcache";
    case v1::LAYER_RECYCLE:
      return "recycle";
    case v1::LAYER_HEADPOOL:
      return "headpool";
    case v1::LAYER_MAGAZINE:
      return "magazine";
    default:
      return "?";
  }
}

std::string PortList(const google::protobuf::RepeatedField<uint32_t>& p) {
  return p.empty() ? "-" : absl::StrJoin(p, ",");
}

uint32_t QuiesceTimeoutMs(const v1::PoolInfo& p) {
  return p.quiesce_timeout_ms();
}

}  // namespace skbnf::ctl
