// SPDX-License-Identifier: BSD-3-Clause
// The one list of metric families (server/core/metric_families.h) is well formed: every name is
// skbnf_*, unique, a counter's name ends in _total and nothing else's does, every family says
// what it counts. (metrics_test.py checks the other half: nothing is exported that is not here.)
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "server/core/metric_families.h"

namespace skbnf::control {
namespace {

TEST(MetricFamilies, NamesAreUniqueWellFormedAndExplained) {
  std::set<absl::string_view> names;
  for (const MetricDef* d : metric::kAll) {
    const std::string name(d->name);
    EXPECT_TRUE(names.insert(d->name).second) << name << " is defined twice";
    EXPECT_EQ(name.rfind("skbnf_", 0), 0u) << name;
    const bool total = name.size() > 6 && name.substr(name.size() - 6) == "_total";
    EXPECT_EQ(total, d->type == prometheus::MetricType::Counter) << name;
    EXPECT_GT(d->help.size(), 10u) << name;
    for (char c : name) {
      EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') << name;
    }
  }
  EXPECT_GT(names.size(), 40u);
}

TEST(MetricFamilies, NewFamilyIsTheDefinition) {
  const prometheus::MetricFamily f = NewFamily(metric::kPoolAllocsTotal);
  EXPECT_EQ(f.name, "skbnf_pool_allocs_total");
  EXPECT_EQ(f.type, prometheus::MetricType::Counter);
  EXPECT_EQ(f.help, std::string(metric::kPoolAllocsTotal.help));
  EXPECT_TRUE(f.metric.empty());
}

}  // namespace
}  // namespace skbnf::control
