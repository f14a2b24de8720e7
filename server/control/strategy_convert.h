// SPDX-License-Identifier: BSD-3-Clause
// Strategy conversions of the API: pool::StrategySpec <-> skbnf.v1 (StructuredStrategy, Layer),
// (StrategyText, the strategy as the API shows it, is core's: server/core/backend.h).
//
// One parser, two forms. The structured form is not checked here: it is written out as the
// spec grammar's own tokens (layer, then its tunables as key=value, then each modifier) and
// each token is fed to StrategySpec::Parse in turn, so the first token the parser refuses names
// the request field it came from. The same fault therefore gives the same parser message in
// both forms, only the field differs: "spec: tunable 'magazine:size' = 0 is out of range
// [1, 1024]" and "structured.layers[0].tunables[size]: tunable 'magazine:size' = 0 is out of
// range [1, 1024]". What only the structured form can get wrong (an enum value that is no layer,
// a key or modifier that is not a name) is refused before any token is written.
#ifndef SKBNF_SERVER_CONTROL_STRATEGY_CONVERT_H_
#define SKBNF_SERVER_CONTROL_STRATEGY_CONVERT_H_

#include <string>

#include "absl/status/statusor.h"
#include "dataplane/pool/layer_facts.h"
#include "dataplane/pool/strategy_spec.h"
#include "server/core/backend.h"
#include "skbnf/v1/control.pb.h"

namespace skbnf::control {

v1::Layer LayerToProto(pool::Layer l);

// The request's strategy, either form: INVALID_ARGUMENT "<field>: <why>" (field "strategy" when
// neither form is set, "spec" or a path under "structured").
absl::StatusOr<pool::StrategySpec> StrategyFromRequest(const v1::SetStrategyRequest& req);
absl::StatusOr<pool::StrategySpec> StrategyFromStructured(const v1::StructuredStrategy& s);
void StrategyToStructured(const pool::StrategySpec& spec, v1::StructuredStrategy* out);

// ListStrategies' grammar text: the spec grammar and the stack order of `catalog`.
std::string StrategyGrammar(const std::vector<pool::CatalogEntry>& catalog = pool::LayerCatalog());

// ListStrategies' answer but `swappable`: a catalogue's layers (name, help, tunables with default
// and range, place in the stack; the production one, or a test's list's), the modifiers and the
// grammar. What `skbnfctl strategy list` prints.
void FillStrategyList(const std::vector<pool::CatalogEntry>& catalog,
                      v1::ListStrategiesResponse* resp);

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CONTROL_STRATEGY_CONVERT_H_
