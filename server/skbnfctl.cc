// skbnfctl: command-line client of skbnf.v1.Control.
//
//   skbnfctl [flags] info | ports | strategy list|get|set SPEC [--dry-run] | stats | top
//                    | routes add PREFIX PORT DST_MAC | routes del PREFIX | routes list
//                    | worker pause|resume CORE | audit
//
// Exit codes: 0 success, 2 usage error (nothing sent), 1 the server refused or failed (its
// status code and message on stderr), or the swap rolled back.
// Text output is for people (tables); --json prints the response message as JSON (proto field
// names, every field present), one object per command, or one per line for `top`.
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/credentials.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "skbnf/v1/control.grpc.pb.h"

namespace {

namespace v1 = skbnf::v1;

constexpr const char* kUsage = R"(usage: skbnfctl [flags] COMMAND [args]

commands:
  info                              version, build, EAL arguments, lcores, pool, mode
  ports                             ports and their links, queues and rings
  strategy list                     layers, modifiers and tunables a strategy can use
  strategy get                      the strategy in force
  strategy set SPEC [--dry-run]     validate (--dry-run) or swap the strategy under traffic
               [--quiesce-timeout-ms=N]
  stats [--core=N ...]              one table of per-core counters and rates
  top [--interval=MS] [--count=N]   live per-core view, refreshed every interval (1000 ms)
  routes add PREFIX PORT DST_MAC    l3 mode: route a.b.c.d/len to a next hop
  routes del PREFIX
  routes list
  worker pause CORE | resume CORE   park / unpark one worker core
  audit                             conservation audit of the buffer pool

flags:
  --addr=ADDR            server, host:port or unix:/path (default $SKBNF_ADDR or 127.0.0.1:50051)
  --tls                  use TLS with the system roots (implied by --tls-ca)
  --tls-ca=FILE          PEM CA that signed the server certificate
  --tls-cert=FILE        PEM client certificate (needed for changes on a TLS listener)
  --tls-key=FILE         PEM key of --tls-cert
  --tls-server-name=NAME expected server name (default: the host in --addr)
  --timeout=SECONDS      deadline of each call (default 10; not for top)
  --json                 print responses as JSON
)";

struct UsageError {
  std::string message;
};

struct Args {
  std::map<std::string, std::string> values;  // last value of each flag
  std::vector<std::string> cores;             // --core, repeatable
  std::vector<std::string> positional;
  bool Has(const std::string& k) const { return values.count(k) > 0; }
  std::string Get(const std::string& k, const std::string& def = "") const {
    auto it = values.find(k);
    return it == values.end() ? def : it->second;
  }
};

Args ParseArgs(int argc, char** argv) {
  static const std::vector<std::string> kValueFlags = {
      "addr",    "tls-ca",   "tls-cert", "tls-key", "tls-server-name",
      "timeout", "interval", "count",    "core",    "quiesce-timeout-ms"};
  static const std::vector<std::string> kBoolFlags = {"json", "tls", "dry-run", "help"};
  Args a;
  bool flags_done = false;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (flags_done || !absl::StartsWith(s, "--")) {
      a.positional.push_back(s);
      continue;
    }
    if (s == "--") {
      flags_done = true;
      continue;
    }
    std::string name = s.substr(2), value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    std::replace(name.begin(), name.end(), '_', '-');
    bool is_value = std::find(kValueFlags.begin(), kValueFlags.end(), name) != kValueFlags.end();
    bool is_bool = std::find(kBoolFlags.begin(), kBoolFlags.end(), name) != kBoolFlags.end();
    if (!is_value && !is_bool) throw UsageError{absl::StrCat("unknown flag --", name)};
    if (is_bool) {
      if (has_value && value != "true" && value != "false") {
        throw UsageError{absl::StrCat("--", name, " takes no value")};
      }
      if (!has_value || value == "true") a.values[name] = "true";
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) throw UsageError{absl::StrCat("--", name, " needs a value")};
      value = argv[++i];
    }
    if (name == "core")
      a.cores.push_back(value);
    else
      a.values[name] = value;
  }
  return a;
}

uint32_t ParseUint(const std::string& what, const std::string& s) {
  uint32_t v = 0;
  if (!absl::SimpleAtoi(s, &v) || s.empty() || s[0] == '-' || s[0] == '+') {
    throw UsageError{absl::StrCat(what, ": '", s, "' is not a non-negative whole number")};
  }
  return v;
}

std::string ReadFile(const std::string& flag, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError{absl::StrCat("--", flag, ": cannot read '", path, "'")};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Column-aligned text table; the last column is not padded.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print(std::ostream& out, const std::string& indent = "") const {
    std::vector<size_t> w;
    for (const auto& r : rows_) {
      for (size_t i = 0; i < r.size(); ++i) {
        if (w.size() <= i) w.push_back(0);
        w[i] = std::max(w[i], r[i].size());
      }
    }
    for (const auto& r : rows_) {
      std::string line = indent;
      for (size_t i = 0; i < r.size(); ++i) {
        line += r[i];
        if (i + 1 < r.size()) line += std::string(w[i] - r[i].size() + 2, ' ');
      }
      out << line << "\n";
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string Yes(bool b) { return b ? "yes" : "no"; }
std::string Rate(double v) {
  if (v >= 1e6) return absl::StrFormat("%.2fM", v / 1e6);
  if (v >= 1e3) return absl::StrFormat("%.1fk", v / 1e3);
  return absl::StrFormat("%.0f", v);
}
std::string LayerName(int l) {
  switch (l) {
    case v1::LAYER_LCACHE:
      return "lcache";
    case v1::LAYER_RECYCLE:
      return "recycle";
    case v1::LAYER_HEADPOOL:
      return "headpool";
    case v1::LAYER_MAGAZINE:
      return "magazine";
    default:
      return "?";
  }
}
std::string Ports(const google::protobuf::RepeatedField<uint32_t>& p) {
  return p.empty() ? "-" : absl::StrJoin(p, ",");
}

class Client {
 public:
  Client(const Args& a) : args_(a), json_(a.Has("json")) {
    std::string addr = a.Get("addr");
    if (addr.empty()) {
      const char* env = std::getenv("SKBNF_ADDR");
      addr = env != nullptr && *env ? env : "127.0.0.1:50051";
    }
    timeout_s_ = a.Has("timeout") ? ParseUint("--timeout", a.Get("timeout")) : 10;
    bool tls = a.Has("tls") || a.Has("tls-ca") || a.Has("tls-cert");
    if (a.Has("tls-cert") != a.Has("tls-key")) {
      throw UsageError{"--tls-cert and --tls-key go together"};
    }
    grpc::ChannelArguments ch;
    std::shared_ptr<grpc::ChannelCredentials> creds;
    if (tls) {
      grpc::SslCredentialsOptions o;
      if (a.Has("tls-ca")) o.pem_root_certs = ReadFile("tls-ca", a.Get("tls-ca"));
      if (a.Has("tls-cert")) {
        o.pem_cert_chain = ReadFile("tls-cert", a.Get("tls-cert"));
        o.pem_private_key = ReadFile("tls-key", a.Get("tls-key"));
      }
      creds = grpc::SslCredentials(o);
      if (a.Has("tls-server-name")) ch.SetSslTargetNameOverride(a.Get("tls-server-name"));
    } else {
      creds = grpc::InsecureChannelCredentials();
    }
    stub_ = v1::Control::NewStub(grpc::CreateCustomChannel(addr, creds, ch));
  }

  int Run(const std::vector<std::string>& p);

 private:
  std::unique_ptr<grpc::ClientContext> Ctx() const {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(timeout_s_));
    return c;
  }
  static int Fail(const grpc::Status& s) {
    static const char* kNames[] = {"OK",
                                   "CANCELLED",
                                   "UNKNOWN",
                                   "INVALID_ARGUMENT",
                                   "DEADLINE_EXCEEDED",
                                   "NOT_FOUND",
                                   "ALREADY_EXISTS",
                                   "PERMISSION_DENIED",
                                   "RESOURCE_EXHAUSTED",
                                   "FAILED_PRECONDITION",
                                   "ABORTED",
                                   "OUT_OF_RANGE",
                                   "UNIMPLEMENTED",
                                   "INTERNAL",
                                   "UNAVAILABLE",
                                   "DATA_LOSS",
                                   "UNAUTHENTICATED"};
    int c = s.error_code();
    std::cerr << "skbnfctl: " << (c >= 0 && c <= 16 ? kNames[c] : "ERROR") << ": "
              << s.error_message() << "\n";
    return 1;
  }
  void Json(const google::protobuf::Message& m, bool one_line = false) const {
    google::protobuf::util::JsonPrintOptions o;
    o.add_whitespace = !one_line;
    o.always_print_primitive_fields = true;
    o.preserve_proto_field_names = true;
    std::string out;
    (void)google::protobuf::util::MessageToJsonString(m, &out, o);
    std::cout << out << (one_line || out.empty() || out.back() != '\n' ? "\n" : "");
  }
  static void Need(const std::vector<std::string>& p, size_t n, const char* what) {
    if (p.size() != n) throw UsageError{absl::StrCat("usage: skbnfctl ", what)};
  }

  int Info();
  int PortsCmd();
  int Strategy(const std::vector<std::string>& p);
  int Stats(bool top);
  int Routes(const std::vector<std::string>& p);
  int Worker(const std::vector<std::string>& p);
  int Audit();
  void PrintStats(const v1::Stats& s) const;

  const Args& args_;
  const bool json_;
  uint32_t timeout_s_ = 10;
  std::unique_ptr<v1::Control::Stub> stub_;
};

int Client::Run(const std::vector<std::string>& p) {
  const std::string& cmd = p[0];
  if (cmd == "info") return Need(p, 1, "info"), Info();
  if (cmd == "ports") return Need(p, 1, "ports"), PortsCmd();
  if (cmd == "strategy") return Strategy(p);
  if (cmd == "stats") return Need(p, 1, "stats [--core=N ...]"), Stats(false);
  if (cmd == "top") return Need(p, 1, "top [--interval=MS] [--count=N]"), Stats(true);
  if (cmd == "routes") return Routes(p);
  if (cmd == "worker") return Worker(p);
  if (cmd == "audit") return Need(p, 1, "audit"), Audit();
  throw UsageError{absl::StrCat("unknown command '", cmd, "'")};
}

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
                      pi.quiesce_timeout_us(), " us",
                      pi.native() ? absl::StrCat(", lcore cache ", pi.native_cache_size()) : "")});
  t.Print(std::cout);
  std::cout << "lcores\n";
  Table lt({"LCORE", "ROLE", "CORE", "SOCKET", "RX_PORTS", "TX_PORTS"});
  static const char* kRoles[] = {"?", "main", "worker", "service"};
  for (const v1::Lcore& l : r.lcores()) {
    bool worker = l.role() == v1::LCORE_ROLE_WORKER;
    lt.Add({absl::StrCat(l.lcore_id()), kRoles[l.role() >= 0 && l.role() <= 3 ? l.role() : 0],
            worker ? absl::StrCat(l.core()) : "-", absl::StrCat(l.socket_id()), Ports(l.rx_ports()),
            Ports(l.tx_ports())});
  }
  lt.Print(std::cout, "  ");
  return 0;
}

int Client::PortsCmd() {
  v1::ListPortsResponse r;
  grpc::Status s = stub_->ListPorts(Ctx().get(), v1::ListPortsRequest(), &r);
  if (!s.ok()) return Fail(s);
  if (json_) return Json(r), 0;
  Table t({"ID", "NAME", "DRIVER", "DEVICE", "MAC", "LINK", "SPEED", "RXQ", "TXQ", "RX_RING",
           "TX_RING"});
  for (const v1::Port& p : r.ports()) {
    t.Add({absl::StrCat(p.id()), p.name(), p.driver(), p.device(), p.mac(),
           p.link_up() ? "up" : "down",
           p.link_speed_mbps() ? absl::StrCat(p.link_speed_mbps(), "M") : "-",
           absl::StrCat(p.rx_queues()), absl::StrCat(p.tx_queues()), absl::StrCat(p.rx_ring_size()),
           absl::StrCat(p.tx_ring_size())});
  }
  t.Print(std::cout);
  return 0;
}

int Client::Strategy(const std::vector<std::string>& p) {
  const char* usage = "strategy list | strategy get | strategy set SPEC [--dry-run]";
  if (p.size() < 2) throw UsageError{absl::StrCat("usage: skbnfctl ", usage)};
  if (p[1] == "list") {
    Need(p, 2, usage);
    v1::ListStrategiesResponse r;
    grpc::Status s = stub_->ListStrategies(Ctx().get(), v1::ListStrategiesRequest(), &r);
    if (!s.ok()) return Fail(s);
    if (json_) return Json(r), 0;
    std::cout << "layers (top to bottom; a stack lists them in this order):\n";
    for (const v1::LayerDescription& l : r.layers()) {
      std::cout << "  " << l.name() << "  " << l.help() << "\n";
      for (const v1::TunableDescription& t : l.tunables()) {
        std::cout << "      " << l.name() << ":" << t.key() << "=N  default " << t.default_value()
                  << ", range " << t.min() << ".." << t.max() << "  " << t.help() << "\n";
      }
    }
    std::cout << "  slab  the slab store alone (always at the bottom)\n";
    std::cout << "modifiers:\n";
    for (const v1::ModifierDescription& m : r.modifiers()) {
      std::cout << "  " << m.name() << "  " << m.help() << "\n";
    }
    std::cout << "grammar: " << r.grammar() << "\n";
    std::cout << "swappable: " << Yes(r.swappable()) << "\n";
    return 0;
  }
  if (p[1] == "get") {
    Need(p, 2, usage);
    v1::GetStrategyResponse r;
    grpc::Status s = stub_->GetStrategy(Ctx().get(), v1::GetStrategyRequest(), &r);
    if (!s.ok()) return Fail(s);
    if (json_) return Json(r), 0;
    Table t({"spec", r.spec()});
    t.Add({"epoch", absl::StrCat(r.epoch())});
    t.Add({"swappable", Yes(r.swappable())});
    t.Print(std::cout);
    return 0;
  }
  if (p[1] == "set") {
    Need(p, 3, "strategy set SPEC [--dry-run] [--quiesce-timeout-ms=N]");
    v1::SetStrategyRequest req;
    req.set_spec(p[2]);
    req.set_validate_only(args_.Has("dry-run"));
    if (args_.Has("quiesce-timeout-ms")) {
      req.set_quiesce_timeout_ms(
          ParseUint("--quiesce-timeout-ms", args_.Get("quiesce-timeout-ms")));
    }
    v1::SetStrategyResponse r;
    grpc::Status s = stub_->SetStrategy(Ctx().get(), req, &r);
    if (!s.ok()) return Fail(s);
    const v1::SwapReport& rep = r.report();
    bool failed = !req.validate_only() && !rep.ok();
    if (json_) {
      Json(r);
    } else if (req.validate_only()) {
      std::cout << "valid: " << r.canonical_spec() << " (dry run, not applied)\n";
    } else {
      std::cout << rep.old_spec() << " -> " << rep.new_spec() << "  epoch " << rep.epoch() << "  "
                << (rep.ok()            ? "ok"
                    : rep.rolled_back() ? "ROLLED BACK"
                                        : "FAILED")
                << "  total " << absl::StrFormat("%.1f", static_cast<double>(rep.total_ns()) / 1e3)
                << " us  depot drained " << rep.depot_drained() << "\n";
      Table t({"CORE", "ACK", "ON_BEHALF", "QUIESCE_US", "FLUSHED"});
      for (const v1::CoreSwap& c : rep.cores()) {
        t.Add({absl::StrCat(c.core()), Yes(c.acknowledged()), Yes(c.on_behalf()),
               absl::StrFormat("%.1f", static_cast<double>(c.quiesce_ns()) / 1e3),
               absl::StrCat(c.objects_flushed())});
      }
      t.Print(std::cout);
    }
    if (failed) {
      std::cerr << "skbnfctl: swap failed" << (rep.rolled_back() ? " and rolled back" : "") << ": "
                << rep.error() << "\n";
      return 1;
    }
    return 0;
  }
  throw UsageError{absl::StrCat("usage: skbnfctl ", usage)};
}

void Client::PrintStats(const v1::Stats& s) const {
  std::cout << "strategy " << s.spec() << " (epoch " << s.epoch() << ")  rates over "
            << absl::StrFormat("%.2f", s.window_seconds()) << " s\n";
  Table t({"CORE", "LCORE", "STATE", "RX_PPS", "TX_PPS", "RX_PKTS", "TX_PKTS", "DROPS", "NOMBUF",
           "BUSY", "ALLOC/S", "FREE/S", "FAILS"});
  for (const v1::CoreStats& c : s.cores()) {
    uint64_t rx = 0, tx = 0, drops = 0, nombuf = 0;
    for (const v1::PortStats& p : c.ports()) {
      rx += p.rx_packets();
      tx += p.tx_packets();
      nombuf += p.rx_nombuf();
      for (const v1::DropCount& d : p.drops()) drops += d.packets();
    }
    t.Add({absl::StrCat(c.core()), absl::StrCat(c.lcore()), c.paused() ? "paused" : "running",
           Rate(c.rx_pps()), Rate(c.tx_pps()), absl::StrCat(rx), absl::StrCat(tx),
           absl::StrCat(drops), absl::StrCat(nombuf),
           absl::StrFormat("%.0f%%", 100 * c.busy_ratio()), Rate(c.pool().allocs_per_second()),
           Rate(c.pool().frees_per_second()), absl::StrCat(c.pool().alloc_failures())});
  }
  t.Print(std::cout);
  std::cout << "per-layer allocs (hit/miss) per core:\n";
  Table l(
      {"CORE", "LAYER", "OBJECTS", "ALLOC_HIT", "ALLOC_MISS", "FREE_HIT", "FREE_MISS", "ALLOC/S"});
  for (const v1::CoreStats& c : s.cores()) {
    for (const v1::LayerStats& ls : c.pool().layers()) {
      if (ls.alloc_hits() + ls.alloc_misses() + ls.free_hits() + ls.free_misses() == 0) continue;
      l.Add({absl::StrCat(c.core()), LayerName(ls.layer()), absl::StrCat(ls.objects()),
             absl::StrCat(ls.alloc_hits()), absl::StrCat(ls.alloc_misses()),
             absl::StrCat(ls.free_hits()), absl::StrCat(ls.free_misses()),
             Rate(ls.allocs_per_second())});
    }
  }
  l.Print(std::cout, "  ");
  const v1::PoolObjects& po = s.pool();
  std::cout << "pool: " << po.populated() << " objects: store " << po.in_store() << ", depots "
            << po.in_depots();
  for (const v1::LayerObjectCount& lo : po.in_layers()) {
    std::cout << ", " << LayerName(lo.layer()) << " " << lo.objects();
  }
  std::cout << ", in flight " << po.in_flight() << "\n";
}

int Client::Stats(bool top) {
  std::vector<uint32_t> cores;
  for (const std::string& c : args_.cores) cores.push_back(ParseUint("--core", c));
  if (!top) {
    v1::GetStatsRequest req;
    for (uint32_t c : cores) req.add_cores(c);
    v1::Stats r;
    grpc::Status s = stub_->GetStats(Ctx().get(), req, &r);
    if (!s.ok()) return Fail(s);
    if (json_) return Json(r), 0;
    PrintStats(r);
    return 0;
  }
  v1::WatchStatsRequest req;
  req.set_interval_ms(args_.Has("interval") ? ParseUint("--interval", args_.Get("interval"))
                                            : 1000);
  if (args_.Has("count")) req.set_max_updates(ParseUint("--count", args_.Get("count")));
  for (uint32_t c : cores) req.add_cores(c);
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReader<v1::Stats>> reader = stub_->WatchStats(&ctx, req);
  v1::Stats st;
  const bool tty = isatty(STDOUT_FILENO);
  while (reader->Read(&st)) {
    if (json_) {
      Json(st, true);
    } else {
      if (tty) std::cout << "\033[H\033[2J";  // home + clear, like top
      PrintStats(st);
    }
    std::cout.flush();
  }
  grpc::Status s = reader->Finish();
  return s.ok() ? 0 : Fail(s);
}

int Client::Routes(const std::vector<std::string>& p) {
  const char* usage = "routes add PREFIX PORT DST_MAC | routes del PREFIX | routes list";
  if (p.size() < 2) throw UsageError{absl::StrCat("usage: skbnfctl ", usage)};
  if (p[1] == "add") {
    Need(p, 5, "routes add PREFIX PORT DST_MAC");
    v1::AddRouteRequest req;
    req.set_prefix(p[2]);
    req.mutable_next_hop()->set_port(ParseUint("PORT", p[3]));
    req.mutable_next_hop()->set_dst_mac(p[4]);
    v1::AddRouteResponse r;
    grpc::Status s = stub_->AddRoute(Ctx().get(), req, &r);
    if (!s.ok()) return Fail(s);
    if (json_) return Json(r), 0;
    std::cout << "added " << p[2] << " via next hop " << r.next_hop_id() << "\n";
    return 0;
  }
  if (p[1] == "del") {
    Need(p, 3, "routes del PREFIX");
    v1::DeleteRouteRequest req;
    req.set_prefix(p[2]);
    v1::DeleteRouteResponse r;
    grpc::Status s = stub_->DeleteRoute(Ctx().get(), req, &r);
    if (!s.ok()) return Fail(s);
    if (json_) return Json(r), 0;
    std::cout << "deleted " << p[2] << "\n";
    return 0;
  }
  if (p[1] == "list") {
    Need(p, 2, "routes list");
    v1::ListRoutesResponse r;
    grpc::Status s = stub_->ListRoutes(Ctx().get(), v1::ListRoutesRequest(), &r);
    if (!s.ok()) return Fail(s);
    if (json_) return Json(r), 0;
    std::map<uint32_t, const v1::NextHopEntry*> nh;
    for (const v1::NextHopEntry& n : r.next_hops()) nh[n.id()] = &n;
    Table t({"PREFIX", "NEXT_HOP", "PORT", "DST_MAC"});
    for (const v1::Route& rt : r.routes()) {
      const v1::NextHopEntry* n = nh.count(rt.next_hop_id()) ? nh[rt.next_hop_id()] : nullptr;
      t.Add({rt.prefix(), absl::StrCat(rt.next_hop_id()),
             n ? absl::StrCat(n->next_hop().port()) : "?", n ? n->next_hop().dst_mac() : "?"});
    }
    t.Print(std::cout);
    return 0;
  }
  throw UsageError{absl::StrCat("usage: skbnfctl ", usage)};
}

int Client::Worker(const std::vector<std::string>& p) {
  if (p.size() != 3 || (p[1] != "pause" && p[1] != "resume")) {
    throw UsageError{"usage: skbnfctl worker pause CORE | worker resume CORE"};
  }
  uint32_t core = ParseUint("CORE", p[2]);
  bool was = false;
  grpc::Status s;
  if (p[1] == "pause") {
    v1::PauseWorkerRequest req;
    req.set_core(core);
    v1::PauseWorkerResponse r;
    s = stub_->PauseWorker(Ctx().get(), req, &r);
    if (s.ok() && json_) Json(r);
    was = r.was_paused();
  } else {
    v1::ResumeWorkerRequest req;
    req.set_core(core);
    v1::ResumeWorkerResponse r;
    s = stub_->ResumeWorker(Ctx().get(), req, &r);
    if (s.ok() && json_) Json(r);
    was = r.was_paused();
  }
  if (!s.ok()) return Fail(s);
  if (!json_) {
    if (p[1] == "pause") {
      std::cout << "core " << core << (was ? " was already paused" : " paused") << "\n";
    } else {
      std::cout << "core " << core << (was ? " resumed" : " was not paused") << "\n";
    }
  }
  return 0;
}

int Client::Audit() {
  v1::AuditPoolResponse r;
  grpc::Status s = stub_->AuditPool(Ctx().get(), v1::AuditPoolRequest(), &r);
  if (!s.ok()) return Fail(s);
  if (json_) {
    Json(r);
  } else {
    uint64_t layers = 0;
    std::vector<std::string> parts;
    for (const v1::LayerObjectCount& l : r.in_layers()) {
      layers += l.objects();
      parts.push_back(absl::StrCat(LayerName(l.layer()), " ", l.objects()));
    }
    std::cout << "audit " << (r.ok() ? "ok" : "FAILED") << ": populated " << r.populated()
              << (r.ok() ? " = " : " != ") << "store " << r.in_store() << " + layers " << layers
              << " + depots " << r.in_depots() << " + in flight " << r.in_flight() << "\n";
    std::cout << "  layers: " << absl::StrJoin(parts, ", ") << "\n";
    std::cout << "  handed out " << r.handed_out() << ", double frees " << r.double_frees()
              << ", foreign frees " << r.foreign_frees() << "\n";
    if (!r.message().empty()) std::cout << "  " << r.message() << "\n";
  }
  if (!r.ok()) {
    std::cerr << "skbnfctl: audit failed: " << r.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Args a = ParseArgs(argc, argv);
    if (a.Has("help")) {
      std::cout << kUsage;
      return 0;
    }
    if (a.positional.empty()) throw UsageError{"no command given"};
    Client c(a);
    return c.Run(a.positional);
  } catch (const UsageError& e) {
    std::cerr << "skbnfctl: " << e.message << "\n\n" << kUsage;
    return 2;
  }
}
