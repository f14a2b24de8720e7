// SPDX-License-Identifier: BSD-3-Clause
// skbnfctl's text output: column-aligned tables and the small formatters every command shares.
#ifndef SKBNF_SERVER_SKBNFCTL_TABLE_H_
#define SKBNF_SERVER_SKBNFCTL_TABLE_H_

#include <ostream>
#include <string>
#include <vector>

#include "skbnf/v1/control.pb.h"

namespace skbnf::ctl {

// Column-aligned text table; the last column is not padded.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print(std::ostream& out, const std::string& indent = "") const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string Yes(bool b);
std::string LayerName(int layer);                                          // v1::Layer
std::string PortList(const google::protobuf::RepeatedField<uint32_t>& p);  // "0,1" or "-"
// The pool's default quiesce timeout in ms, the unit skbnfctl shows and takes for it
// (--quiesce-timeout-ms, as SetStrategyRequest): GetInfo's microseconds rounded up.
uint32_t QuiesceTimeoutMs(const v1::PoolInfo& p);

}  // namespace skbnf::ctl

#endif  // SKBNF_SERVER_SKBNFCTL_TABLE_H_
