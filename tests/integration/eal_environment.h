// SPDX-License-Identifier: BSD-3-Clause
// One EAL per test process for the data-plane integration tests (dataplane_test.cc,
// layout_test.cc): the main lcore plus workers on the first two CPUs the process may use, a
// distinct --file-prefix per process, cleaned up at the end (the runtime directory EAL leaves
// behind, empty with --no-shconf, is removed).
#ifndef SKBNF_TESTS_INTEGRATION_EAL_ENVIRONMENT_H_
#define SKBNF_TESTS_INTEGRATION_EAL_ENVIRONMENT_H_

#include <rte_eal.h>
#include <sched.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace skbnf::dpdk {

class EalEnvironment : public ::testing::Environment {
 public:
  // memory: the EAL memory options (e.g. {"--no-huge", "-m", "512"}); workers: how many
  // worker lcores (1 or 2) after the main lcore 0; lcore 1 runs on the second CPU, lcore 2 on
  // the first (beside the main lcore).
  EalEnvironment(std::string prefix, std::vector<std::string> memory, int workers)
      : prefix_(std::move(prefix)), memory_(std::move(memory)), workers_(workers) {}

  void SetUp() override {
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof(set), &set);
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
    const int a = cpus.at(0), b = cpus.size() > 1 ? cpus[1] : cpus[0];
    std::string lcores = absl::StrCat("--lcores=0@", a, ",1@", b);
    if (workers_ > 1) absl::StrAppend(&lcores, ",2@", a);
    std::vector<std::string> args = {prefix_};
    args.insert(args.end(), memory_.begin(), memory_.end());
    args.insert(args.end(),
                {"--no-pci", "--no-shconf", absl::StrCat("--file-prefix=", prefix_, "-", getpid()),
                 lcores, "--log-level=lib.eal:warning", "--no-telemetry"});
    std::vector<char*> argv;
    for (auto& s : args) argv.push_back(s.data());
    ASSERT_GE(rte_eal_init(static_cast<int>(argv.size()), argv.data()), 0);
  }

  void TearDown() override {
    const std::string runtime_dir = rte_eal_get_runtime_dir();
    rte_eal_cleanup();
    ::rmdir(runtime_dir.c_str());
  }

 private:
  std::string prefix_;
  std::vector<std::string> memory_;
  int workers_;
};

}  // namespace skbnf::dpdk

#endif  // SKBNF_TESTS_INTEGRATION_EAL_ENVIRONMENT_H_
