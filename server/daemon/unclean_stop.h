// SPDX-License-Identifier: BSD-3-Clause
// After a crash: what skbnfd finds of a predecessor that did not stop, and what it says about it
// (issue 34 item 3: "SIGKILL under traffic, restart with the same config: it starts, comes back
// to the config's state, and says so").
//
// What a killed skbnfd leaves, and who clears it:
//   its unix:/path control socket   a clean stop removes it; after a kill it stays, nothing
//                                   listening. The listener replaces it only when a connect is
//                                   refused (server/control/listener.cc); StaleControlSocket
//                                   says so first, here.
//   its hugepage files              DPDK 22.11 leaves them on any stop (not with --in-memory);
//                                   EAL's clear_hugedir removes every unlocked *map_* file at
//                                   the next start; the preflight counts their pages as free
//                                   and warns (server/ops/preflight.h, hugepages).
//   its runtime directory           /var/run/dpdk/<file-prefix>: the new primary takes the
//                                   config file's lock, which died with the old process.
// What comes back is the config file's state (its strategy and routes), nothing more: changes
// made over the API since the last load are not persisted (skbnf_config_drift shows them while
// the process lives). ConfigStateLine says that in one line once the file is applied.
#ifndef SKBNF_SERVER_DAEMON_UNCLEAN_STOP_H_
#define SKBNF_SERVER_DAEMON_UNCLEAN_STOP_H_

#include <cstddef>
#include <optional>
#include <string>

namespace skbnf::control {

// For `listen` (one address or a comma-separated list): the first unix:/path entry that is a
// socket nobody accepts on (connect: ECONNREFUSED), described for the log: "control socket
// /run/skbnf/ctl.sock is stale (nothing listens on it: the skbnfd that made it did not stop);
// it is replaced". nullopt when there is none. Without an argument: skbnfd's --listen flag
// (read from absl's flag registry; none when the control plane is not linked in).
std::optional<std::string> StaleControlSocket(const std::string& listen);
std::optional<std::string> StaleControlSocket();

// "running the config file's state (/etc/skbnf/skbnfd.conf): strategy recycle+magazine, 3
// routes", prefixed by "back after an unclean stop (<why>): " when `unclean` names a finding, and
// followed by what is not restored.
std::string ConfigStateLine(const std::string& path, const std::string& strategy, size_t routes,
                            const std::optional<std::string>& unclean);

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_DAEMON_UNCLEAN_STOP_H_
