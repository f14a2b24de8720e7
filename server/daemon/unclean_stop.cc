// SPDX-License-Identifier: BSD-3-Clause
#include "server/daemon/unclean_stop.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace skbnf::control {
namespace {

// ECONNREFUSED from a connect to `path`: a socket file with no listener (unix(7)).
bool Refused(const std::string& path) {
  sockaddr_un a{};
  if (path.size() >= sizeof(a.sun_path)) return false;
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool refused =
      ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) != 0 && errno == ECONNREFUSED;
  ::close(fd);
  return refused;
}

}  // namespace

std::optional<std::string> StaleControlSocket(const std::string& listen) {
  for (absl::string_view entry : absl::StrSplit(listen, ',', absl::SkipEmpty())) {
    if (!absl::ConsumePrefix(&entry, "unix:")) continue;  // also skips unix-abstract:
    absl::ConsumePrefix(&entry, "//");
    const std::string path(entry);
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode) || !Refused(path)) continue;
    return absl::StrCat("control socket ", path,
                        " is stale (nothing listens on it: the skbnfd that made it did not stop); "
                        "it is replaced");
  }
  return std::nullopt;
}

std::optional<std::string> StaleControlSocket() {
  const absl::CommandLineFlag* f = absl::FindCommandLineFlag("listen");
  return f != nullptr ? StaleControlSocket(f->CurrentValue()) : std::nullopt;
}

std::string ConfigStateLine(const std::string& path, const std::string& strategy, size_t routes,
                            const std::optional<std::string>& unclean) {
  return absl::StrCat(unclean ? absl::StrCat("back after an unclean stop (", *unclean, "): ") : "",
                      "running the config file's state (", path, "): strategy ", strategy, ", ",
                      routes,
                      " routes; changes made over the API before a restart are not "
                      "restored");
}

}  // namespace skbnf::control
