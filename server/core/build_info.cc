// SPDX-License-Identifier: BSD-3-Clause
#include "server/core/build_info.h"

namespace skbnf::control {

const BuildInfo& GetBuildInfo() {
  static const BuildInfo kInfo = {SKBNF_VERSION, SKBNF_GIT_COMMIT, SKBNF_COMPILER,
                                  SKBNF_BUILD_TYPE};
  return kInfo;
}

}  // namespace skbnf::control
