// SPDX-License-Identifier: BSD-3-Clause
#include "dataplane/dpdk/eal.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace skbnf::dpdk {
namespace {

std::string* g_runtime_dir = new std::string();  // EAL's, removed at exit when empty

// Registered before rte_eal_init, so it runs after EAL's own exit handlers (telemetry removes
// its sockets there): EAL leaves an empty runtime directory per --file-prefix otherwise.
void RemoveRuntimeDir() {
  if (!g_runtime_dir->empty()) ::rmdir(g_runtime_dir->c_str());
}

}  // namespace

absl::Status EalInit(const std::vector<std::string>& args) {
  std::vector<std::string> copy = args;  // EAL may permute argv
  std::vector<char*> argv;
  for (std::string& s : copy) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::atexit(&RemoveRuntimeDir);
  if (rte_eal_init(static_cast<int>(copy.size()), argv.data()) < 0) {
    return absl::InvalidArgumentError(absl::StrCat("EAL initialisation failed (",
                                                   rte_strerror(rte_errno),
                                                   "); check the EAL arguments after `--`"));
  }
  *g_runtime_dir = rte_eal_get_runtime_dir();
  return absl::OkStatus();
}

unsigned EalMainLcore() { return rte_get_main_lcore(); }

void EalCleanup() { rte_eal_cleanup(); }

}  // namespace skbnf::dpdk
