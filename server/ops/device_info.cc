// SPDX-License-Identifier: BSD-3-Clause
#include "server/ops/device_info.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/ops/pci_env.h"

namespace skbnf::preflight {
namespace {

// protobuf's parser error, on one line: "Unexpected end of string. Expected : between
// key:value pair." (its status code prefix and the text-and-caret lines after dropped).
std::string JsonError(std::string e) {
  if (size_t colon = e.find(':'); colon != std::string::npos && e.compare(0, 7, "INVALID") == 0) {
    e.erase(0, colon + 1);
  }
  if (size_t nl = e.find('\n'); nl != std::string::npos) e.resize(nl);
  return e;
}

}  // namespace

absl::Status ParseJsonValue(absl::string_view json, google::protobuf::Value* out) {
  auto st = google::protobuf::util::JsonStringToMessage(std::string(json), out);
  if (!st.ok())
    return absl::InvalidArgumentError(absl::StrCat("not JSON: ", JsonError(st.ToString())));
  return absl::OkStatus();
}

std::optional<std::string> DeviceInfo::Get(absl::string_view provider,
                                           absl::string_view key) const {
  auto p = providers.find(std::string(provider));
  if (p == providers.end()) return std::nullopt;
  auto k = p->second.find(std::string(key));
  if (k == p->second.end()) return std::nullopt;
  return k->second;
}

std::optional<std::string> DeviceInfo::VfioGroupNode() const {
  if (auto v = Get("vfio", "dev-mount")) return v;
  return Get("vfio", "vfio-dev-mount");  // the plugin README's spelling
}

std::vector<std::string> DeviceInfo::RdmaNodes() const {
  std::vector<std::string> out;
  for (const char* key : {"issm", "rdma_cm", "umad", "uverbs"}) {
    if (auto v = Get("rdma", key); v && !v->empty()) out.push_back(*v);
  }
  return out;
}

std::optional<std::string> DeviceInfo::RdmaUverbs() const { return Get("rdma", "uverbs"); }

absl::StatusOr<std::map<std::string, DeviceInfo>> ParseDeviceInfoJson(absl::string_view json) {
  google::protobuf::Value root;
  if (absl::Status st = ParseJsonValue(json, &root); !st.ok()) return st;
  if (root.kind_case() != google::protobuf::Value::kStructValue) {
    return absl::InvalidArgumentError(
        "not a JSON object keyed by PCI address ({\"0000:3b:02.0\": {\"vfio\": {...}}})");
  }
  std::map<std::string, DeviceInfo> out;
  for (const auto& [address, device] : root.struct_value().fields()) {
    if (!dpdk::ValidPciAddress(address)) {
      return absl::InvalidArgumentError(
          absl::StrCat("key '", address, "' is not a PCI address ([dddd:]bb:dd.f)"));
    }
    if (device.kind_case() != google::protobuf::Value::kStructValue) {
      return absl::InvalidArgumentError(
          absl::StrCat(address, ": not an object of providers ({\"vfio\": {...}, ...})"));
    }
    DeviceInfo& info = out[dpdk::FullPciAddress(address)];
    for (const auto& [provider, entries] : device.struct_value().fields()) {
      if (entries.kind_case() != google::protobuf::Value::kStructValue) {
        return absl::InvalidArgumentError(
            absl::StrCat(address, ".", provider, ": not an object of strings"));
      }
      auto& keys = info.providers[provider];
      for (const auto& [key, value] : entries.struct_value().fields()) {
        if (value.kind_case() == google::protobuf::Value::kStringValue) {
          keys[key] = value.string_value();
        }
      }
    }
  }
  return out;
}

}  // namespace skbnf::preflight
