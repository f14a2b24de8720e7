// SPDX-License-Identifier: BSD-3-Clause
// AF_XDP ports' link as the kernel sees it: net_af_xdp does not report one.
//
// DPDK 22.11's net_af_xdp (drivers/net/af_xdp/rte_eth_af_xdp.c) sets link_status UP in
// eth_dev_start and DOWN in eth_dev_stop, and its eth_link_update does nothing: an interface set
// down, or deleted, still reads "link up", so readiness stayed SERVING on a port that forwarded
// nothing (issue 34 item 2; tests/integration/af_xdp_flap_test.sh). Its XDP sockets are bound to
// the ifindex they were created on (xsk_configure -> xsk_socket__create on internals->if_index,
// the one eth_dev_info reports as if_index): a new interface of the same name is another ifindex
// and the sockets are not bound to it, so a port whose ifindex is gone is dead for good. The
// kernel's view: the ifindex still names an interface (if_indextoname) that is administratively
// up with its carrier (SIOCGIFFLAGS: IFF_UP and IFF_RUNNING).
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "dataplane/dpdk/engine_state.h"

namespace skbnf::dpdk {

bool XdpInterfaceUp(uint32_t if_index) {
  char name[IF_NAMESIZE] = {};
  if (if_index == 0 || ::if_indextoname(if_index, name) == nullptr) return false;
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return true;  // cannot ask: keep the PMD's word
  ifreq req{};
  std::memcpy(req.ifr_name, name, sizeof(req.ifr_name));
  const bool asked = ::ioctl(fd, SIOCGIFFLAGS, &req) == 0;
  ::close(fd);
  if (!asked) return false;  // gone between the two calls
  return (req.ifr_flags & IFF_UP) != 0 && (req.ifr_flags & IFF_RUNNING) != 0;
}

}  // namespace skbnf::dpdk
