// SPDX-License-Identifier: BSD-3-Clause
// The frames of a pcap file, read with libpcap itself (pcap_open_offline, pcap_next_ex: the
// reader tcpdump and DPDK's net_pcap use; libpcap's pcap_next_ex(3PCAP), pcap_open_offline(3PCAP)).
// A test's reader only (issue 30 item 5: production code that only tests used goes to the tests):
// the data-plane tests read what net_pcap's tx_pcap wrote, and the demo's WritePcap
// (server/daemon/traffic.h) is checked against the real reader rather than against its own twin.
#ifndef SKBNF_TESTS_INTEGRATION_PCAP_READER_H_
#define SKBNF_TESTS_INTEGRATION_PCAP_READER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/daemon/traffic.h"

namespace skbnf::dpdk {

// Every record's captured bytes, in file order. NOT_FOUND / INVALID_ARGUMENT with libpcap's
// error text when the file cannot be opened or is not a capture; a truncated last record is
// an error too (libpcap's).
absl::StatusOr<std::vector<Frame>> ReadPcap(const std::string& path);

}  // namespace skbnf::dpdk

#endif  // SKBNF_TESTS_INTEGRATION_PCAP_READER_H_
