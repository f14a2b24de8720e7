// SPDX-License-Identifier: BSD-3-Clause
// Strategy conversions of the API: pool::StrategySpec <-> skbnf.v1 (StructuredStrategy, Layer),
// (StrategyText, the strategy as the API shows it, is core's: server/core/backend.h). Validation
// errors name the request field (structured.layers[i].tunables[key], ...).
#ifndef SKBNF_SERVER_CONTROL_STRATEGY_CONVERT_H_
#define SKBNF_SERVER_CONTROL_STRATEGY_CONVERT_H_

#include <string>

#include "absl/status/statusor.h"
#include "dataplane/pool/strategy_spec.h"
#include "server/core/backend.h"
#include "skbnf/v1/control.pb.h"

namespace skbnf::control {

v1::Layer LayerToProto(pool::Layer l);

absl::StatusOr<pool::StrategySpec> StrategyFromStructured(const v1::StructuredStrategy& s);
void StrategyToStructured(const pool::StrategySpec& spec, v1::StructuredStrategy* out);

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CONTROL_STRATEGY_CONVERT_H_
