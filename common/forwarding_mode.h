// SPDX-License-Identifier: BSD-3-Clause
// ForwardingMode: how skbnfd's workers forward packets (io, mac, l3). One enum for the engine
// (dataplane/dpdk/engine.h: EngineConfig::mode, the packet path's dispatch), the config file and
// flags (server/ops, server/daemon), and the control plane (server/core/backend.h: Info::mode,
// mapped one to one onto skbnf.v1's ForwardingMode enum). It lives here, DPDK-free, so the
// control plane names the engine's type instead of keeping a copy that a switch translates.
// The namespace is the engine's, as for PortInfo (port_info.h).
#ifndef SKBNF_COMMON_FORWARDING_MODE_H_
#define SKBNF_COMMON_FORWARDING_MODE_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace skbnf::dpdk {

enum class ForwardingMode { kIo, kMac, kL3 };

// "io", "mac" or "l3"; InvalidArgument naming the accepted words otherwise.
absl::StatusOr<ForwardingMode> ParseForwardingMode(absl::string_view text);
// The word ParseForwardingMode accepts (config file, console, change log).
const char* ForwardingModeName(ForwardingMode mode);

}  // namespace skbnf::dpdk

#endif  // SKBNF_COMMON_FORWARDING_MODE_H_
