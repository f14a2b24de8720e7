// SPDX-License-Identifier: BSD-3-Clause
// skbnfctl info, skbnfctl ports: what the daemon runs on.
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/skbnfctl/client.h"
#include "server/skbnfctl/table.h"

namespace skbnf::ctl {

int Client::Info() {
  v1::GetInfoResponse r;
  grpc::Status s = stub_->GetInfo(Ctx().get(), v1::GetInfoRequest(), &r);
  if (!s.ok()) return Fail(s);
  if (json_) return Json(r), 0;
  static const char* kModes[] = {"?", "io", "mac", "l3"};
  std::cout << "skbnf " << r.version() << " (commit " << r.git_commit() << ", " << r.compiler()
            << ", " << r.build_type() << ")\n";
  Table t({"backend", r.backend()});
  t.Add({"mode", kModes[r.mode() >= 0 && r.mode() <= 3 ? r.mode() : 0]});
  t.Add({"uptime", absl::StrCat(r.uptime_seconds(), "s")});
  t.Add({"eal args", absl::StrJoin(r.eal_args(), " ")});
  const v1::PoolInfo& pi = r.pool();
  t.Add({"pool", absl::StrCat(pi.name(), ": ops ", pi.ops_name(), pi.native() ? " (native)" : "",
                              ", ", pi.populated(), " objects x ", pi.element_size(), " B")});
  t.Add({"",
         absl::StrCat(pi.objects_per_slab(), " per slab, colour ", pi.colour() ? "on" : "off",
                      ", debug ", pi.debug() ? "on" : "off", ", quiesce timeout ",
                      QuiesceTimeoutMs(pi), " ms",
                      pi.native() ? absl::StrCat(", lcore cache ", pi.native_cache_size()) : "")});
  t.Print(std::cout);
  std::cout << "lcores\n";
  Table lt({"LCORE", "ROLE", "CORE", "SOCKET", "RX_PORTS", "TX_PORTS"});
  static const char* kRoles[] = {"?", "main", "worker", "service"};
  for (const v1::Lcore& l : r.lcores()) {
    bool worker = l.role() == v1::LCORE_ROLE_WORKER;
    lt.Add({absl::StrCat(l.lcore_id()), kRoles[l.role() >= 0 && l.role() <= 3 ? l.role() : 0],
            worker ? absl::StrCat(l.core()) : "-",
            l.has_socket_id() ? absl::StrCat(l.socket_id()) : "-", PortList(l.rx_ports()),
            PortList(l.tx_ports())});
  }
  lt.Print(std::cout, "  ");
  return 0;
}

int Client::Ports() {
  v1::ListPortsResponse r;
  grpc::Status s = stub_->ListPorts(Ctx().get(), v1::ListPortsRequest(), &r);
  if (!s.ok()) return Fail(s);
  if (json_) return Json(r), 0;
  Table t({"ID", "NAME", "DRIVER", "DEVICE", "MAC", "LINK", "SPEED", "SOCKET", "RXQ", "TXQ",
           "RX_RING", "TX_RING", "IMISSED", "IERRORS", "OERRORS", "PMD_NOMBUF"});
  for (const v1::Port& p : r.ports()) {
    auto pmd = [&](uint64_t v) { return p.has_pmd() ? absl::StrCat(v) : std::string("-"); };
    t.Add({absl::StrCat(p.id()), p.name(), p.driver(), p.device(), p.mac(),
           !p.has_link_up() ? "?"
           : p.link_up()    ? "up"
                            : "down",
           p.link_speed_mbps() ? absl::StrCat(p.link_speed_mbps(), "M") : "-",
           p.has_socket_id() ? absl::StrCat(p.socket_id()) : "-", absl::StrCat(p.rx_queues()),
           absl::StrCat(p.tx_queues()), absl::StrCat(p.rx_ring_size()),
           absl::StrCat(p.tx_ring_size()), pmd(p.pmd().imissed()), pmd(p.pmd().ierrors()),
           pmd(p.pmd().oerrors()), pmd(p.pmd().rx_nombuf())});
  }
  t.Print(std::cout);
  return 0;
}

}  // namespace skbnf::ctl
