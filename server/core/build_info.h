// SPDX-License-Identifier: BSD-3-Clause
// Facts about this binary, fixed at build time (server/CMakeLists.txt passes them in).
#ifndef SKBNF_SERVER_CORE_BUILD_INFO_H_
#define SKBNF_SERVER_CORE_BUILD_INFO_H_

#include <string>

namespace skbnf::control {

struct BuildInfo {
  std::string version;     // project version, e.g. "0.1.0"
  std::string git_commit;  // short commit at configure time, "unknown" outside git
  std::string compiler;    // e.g. "GNU 12.2.0"
  std::string build_type;  // CMake build type
};

const BuildInfo& GetBuildInfo();

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CORE_BUILD_INFO_H_
