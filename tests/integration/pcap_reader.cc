// SPDX-License-Identifier: BSD-3-Clause
#include "tests/integration/pcap_reader.h"

#include <pcap/pcap.h>

#include <cerrno>

#include "absl/strings/str_cat.h"

namespace skbnf::dpdk {

absl::StatusOr<std::vector<Frame>> ReadPcap(const std::string& path) {
  char err[PCAP_ERRBUF_SIZE] = {};
  errno = 0;
  pcap_t* p = pcap_open_offline(path.c_str(), err);
  if (p == nullptr) {
    const std::string why = absl::StrCat(path, ": ", err);
    return errno == ENOENT ? absl::NotFoundError(why) : absl::InvalidArgumentError(why);
  }
  std::vector<Frame> out;
  pcap_pkthdr* h = nullptr;
  const u_char* data = nullptr;
  int rc;
  while ((rc = pcap_next_ex(p, &h, &data)) == 1) {
    out.push_back(Frame{std::vector<uint8_t>(data, data + h->caplen)});
  }
  // PCAP_ERROR_BREAK (-2): no more records; PCAP_ERROR (-1): a read error or a truncated record.
  std::string why = rc == PCAP_ERROR ? absl::StrCat(path, ": ", pcap_geterr(p)) : "";
  pcap_close(p);
  if (!why.empty()) return absl::InvalidArgumentError(why);
  return out;
}

}  // namespace skbnf::dpdk
