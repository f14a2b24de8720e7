// SPDX-License-Identifier: BSD-3-Clause
#include "server/ops/network_status.h"

#include <google/protobuf/struct.pb.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/wait_until.h"
#include "server/ops/device_info.h"
#include "server/ops/pci_env.h"

namespace skbnf::preflight {
namespace {

using google::protobuf::Value;

constexpr absl::string_view kAnnotation = "k8s.v1.cni.cncf.io/network-status";

absl::StatusOr<Value> ParseJson(const std::string& text) {
  Value v;
  if (absl::Status st = ParseJsonValue(text, &v); !st.ok()) return st;
  return v;
}

const Value* Field(const Value& v, const char* name) {
  if (v.kind_case() != Value::kStructValue) return nullptr;
  auto it = v.struct_value().fields().find(name);
  return it == v.struct_value().fields().end() ? nullptr : &it->second;
}

std::string StringField(const Value& v, const char* name) {
  const Value* f = Field(v, name);
  return f != nullptr && f->kind_case() == Value::kStringValue ? f->string_value() : "";
}

// The all-annotations form: `key="value"` lines, value Go-quoted (%q), which is a JSON string
// for the printable text Multus writes.
absl::StatusOr<std::string> AnnotationFromAllAnnotations(absl::string_view text) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, kAnnotation) || !absl::ConsumePrefix(&line, "=")) continue;
    absl::StatusOr<Value> v = ParseJson(std::string(line));
    if (!v.ok() || v->kind_case() != Value::kStringValue) {
      return absl::InvalidArgumentError(
          absl::StrCat(kAnnotation, "= is not a quoted string in the annotations file"));
    }
    return v->string_value();
  }
  return absl::NotFoundError(
      absl::StrCat("neither a JSON list nor an annotations file with ", kAnnotation));
}

std::string Describe(const NetworkAttachment& a) {
  std::string where = a.interface.empty() ? "" : a.interface;
  std::string dev = !a.pci_address.empty()   ? a.pci_address
                    : !a.device_type.empty() ? absl::StrCat(a.device_type, " device, no PCI")
                                             : "no PCI device";
  return absl::StrCat(a.name, " (", where.empty() ? "" : absl::StrCat(where, ", "), dev, ")");
}

std::string Known(const std::vector<NetworkAttachment>& status) {
  std::vector<std::string> k;
  for (const NetworkAttachment& a : status) k.push_back(Describe(a));
  return k.empty() ? "none" : absl::StrJoin(k, ", ");
}

}  // namespace

absl::StatusOr<std::vector<NetworkAttachment>> ParseNetworkStatus(absl::string_view text) {
  std::string json(absl::StripAsciiWhitespace(text));
  if (!absl::StartsWith(json, "[")) {
    absl::StatusOr<std::string> a = AnnotationFromAllAnnotations(text);
    if (!a.ok()) return a.status();
    json = *a;
  }
  absl::StatusOr<Value> root = ParseJson(json);
  if (!root.ok()) return root.status();
  if (root->kind_case() != Value::kListValue) {
    return absl::InvalidArgumentError("not a JSON list of attachments ([{\"name\": ...}, ...])");
  }
  std::vector<NetworkAttachment> out;
  for (const Value& e : root->list_value().values()) {
    if (e.kind_case() != Value::kStructValue || StringField(e, "name").empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("entry ", out.size(), " is not an object with a \"name\""));
    }
    NetworkAttachment a;
    a.name = StringField(e, "name");
    a.interface = StringField(e, "interface");
    const Value* d = Field(e, "default");
    a.is_default = d != nullptr && d->kind_case() == Value::kBoolValue && d->bool_value();
    if (const Value* info = Field(e, "device-info")) {
      a.device_type = StringField(*info, "type");
      if (const Value* pci = Field(*info, "pci")) {
        const std::string addr = StringField(*pci, "pci-address");
        if (!addr.empty() && !dpdk::ValidPciAddress(addr)) {
          return absl::InvalidArgumentError(
              absl::StrCat(a.name, ": device-info pci-address '", addr, "' is not a PCI address"));
        }
        if (!addr.empty()) a.pci_address = dpdk::FullPciAddress(addr);
      }
    }
    out.push_back(std::move(a));
  }
  return out;
}

absl::StatusOr<std::vector<NetworkAttachment>> ReadNetworkStatusFile(const std::string& path,
                                                                     absl::Duration timeout) {
  std::string text;
  bool exists = false;
  auto read = [&] {
    std::ifstream f(path);
    exists = static_cast<bool>(f);
    if (!exists) return false;
    std::stringstream s;
    s << f.rdbuf();
    text = s.str();
    return !absl::StripAsciiWhitespace(text).empty();
  };
  if (!WaitUntil(absl::ToChronoNanoseconds(timeout), read, std::chrono::milliseconds(100))) {
    return absl::UnavailableError(absl::StrCat(
        "--network-status-file=", path, ": ", exists ? "still empty" : "not there",
        " after --network-status-timeout=", absl::FormatDuration(timeout), ". Mount the pod's ",
        kAnnotation,
        " annotation there (a downwardAPI volume item with fieldRef metadata.annotations['",
        kAnnotation,
        "']); Multus writes it once the pod's networks are attached: is Multus installed and does "
        "the pod list its networks in k8s.v1.cni.cncf.io/networks?"));
  }
  absl::StatusOr<std::vector<NetworkAttachment>> status = ParseNetworkStatus(text);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--network-status-file=", path, ": ", status.status().message()));
  }
  return status;
}

absl::StatusOr<std::string> PciAddressOfNetwork(const std::vector<NetworkAttachment>& status,
                                                absl::string_view network) {
  std::pair<absl::string_view, absl::string_view> ni =
      absl::StrSplit(network, absl::MaxSplits('@', 1));
  const absl::string_view name = ni.first, interface = ni.second;
  const bool namespaced = absl::StrContains(name, '/');
  std::vector<const NetworkAttachment*> match;
  for (const NetworkAttachment& a : status) {
    absl::string_view short_name = a.name;
    if (size_t slash = short_name.rfind('/'); slash != absl::string_view::npos) {
      short_name.remove_prefix(slash + 1);
    }
    const bool same = a.name == name || (!namespaced && short_name == name);
    if (same && (interface.empty() || a.interface == interface)) match.push_back(&a);
  }
  if (match.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "no network '", network, "' in the pod's network-status; the pod has: ", Known(status)));
  }
  if (match.size() > 1) {
    std::vector<std::string> which;
    for (const NetworkAttachment* a : match) {
      which.push_back(match[0]->name == match[1]->name
                          ? absl::StrCat("net=", name, "@", a->interface)
                          : absl::StrCat("net=", a->name));
    }
    return absl::InvalidArgumentError(absl::StrCat("'", network, "' names ", match.size(),
                                                   " attachments; write one of ",
                                                   absl::StrJoin(which, ", ")));
  }
  const NetworkAttachment& a = *match[0];
  if (a.pci_address.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "network ", Describe(a),
        " has no PCI device in its device-info: only a network whose device plugin publishes "
        "device-info (an SR-IOV network: sriov-network-device-plugin and Multus with device-info "
        "support) can be a port; the pod has: ",
        Known(status)));
  }
  return a.pci_address;
}

}  // namespace skbnf::preflight
