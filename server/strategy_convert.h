// SPDX-License-Identifier: BSD-3-Clause
// Strategy conversions of the API: pool::StrategySpec <-> skbnf.v1 (StructuredStrategy, Layer),
// and the strategy text the API shows. Validation errors name the request field
// (structured.layers[i].tunables[key], ...).
#ifndef SKBNF_SERVER_STRATEGY_CONVERT_H_
#define SKBNF_SERVER_STRATEGY_CONVERT_H_

#include <string>

#include "absl/status/statusor.h"
#include "dataplane/pool/strategy_spec.h"
#include "server/backend.h"
#include "skbnf/v1/control.pb.h"

namespace skbnf::control {

v1::Layer LayerToProto(pool::Layer l);

// The strategy as the API shows it: the canonical spec, or on the native mempool its ops name
// (e.g. "ring_mp_mc"). `pool` is Backend::GetInfo().pool (fixed for the daemon's life).
std::string StrategyText(const Backend& backend, const PoolInfo& pool);

absl::StatusOr<pool::StrategySpec> StrategyFromStructured(const v1::StructuredStrategy& s);
void StrategyToStructured(const pool::StrategySpec& spec, v1::StructuredStrategy* out);

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_STRATEGY_CONVERT_H_
