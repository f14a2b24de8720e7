// SPDX-License-Identifier: BSD-3-Clause
#include "server/daemon/native_twin.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/flags/flag.h"
#include "dataplane/dpdk/engine.h"

ABSL_FLAG(std::string, native_twin, "",
          "Benchmark knob: give every polled RX queue a twin on DPDK's ring_mp_mc pool (lcore "
          "cache --mbuf-cache, default 256) and poll the side this FILE names, `skbnf` or "
          "`native`, looked at every 20 ms (skbnf's pool against DPDK's in one process, as the "
          "interleaved benchmark compares them). Needs --pool-ops=skbnf, one RX queue a port, and a PMD whose "
          "queues each have their own traffic; doubles the pool's memory.");

namespace skbnf::control {

bool NativeTwinRequested() { return !absl::GetFlag(FLAGS_native_twin).empty(); }

NativeTwinSwitch::NativeTwinSwitch(dpdk::Engine& engine)
    : path_(absl::GetFlag(FLAGS_native_twin)) {
  Tick(engine);
}

void NativeTwinSwitch::Tick(dpdk::Engine& engine) {
  if (path_.empty()) return;
  struct stat st {};
  const bool exists = ::stat(path_.c_str(), &st) == 0;
  if (exists == seen_ && (!exists || (st.st_mtim.tv_sec == mtime_.tv_sec &&
                                      st.st_mtim.tv_nsec == mtime_.tv_nsec &&
                                      st.st_size == size_))) {
    return;
  }
  seen_ = exists;
  if (exists) {
    mtime_ = st.st_mtim;
    size_ = st.st_size;
  }
  std::string word = "skbnf";  // a missing file: the skbnf side
  if (exists) {
    // Its first word, from at most its first 64 bytes (the file is never read whole).
    char head[64] = {};
    std::ifstream f(path_);
    f.read(head, sizeof head - 1);
    std::istringstream(std::string(head, static_cast<size_t>(f.gcount()))) >> word;
  }
  if (word != "skbnf" && word != "native") {
    std::fprintf(stderr,
                 "skbnfd: --native-twin=%s says '%s': write `skbnf` or `native`; the side in "
                 "force stays as it is\n",
                 path_.c_str(), word.c_str());
    return;
  }
  const bool native = word == "native";
  if (native == engine.native_twin_in_use()) return;
  if (absl::Status s = engine.UseNativeTwin(native); !s.ok()) {
    std::fprintf(stderr, "skbnfd: --native-twin: %s\n", std::string(s.message()).c_str());
    return;
  }
  std::fprintf(stderr, "skbnfd: native twin: the workers poll the %s side (%s)\n",
               native ? "native" : "skbnf", engine.strategy().c_str());
}

}  // namespace skbnf::control
