// SPDX-License-Identifier: BSD-3-Clause
// Tune shaping: skbnf.v1.TuneStrategyRequest -> TuneRequest, and the tuner's progress events and
// report (server/tuner/tuner.h) -> skbnf.v1.TuneProgress. Used by the TuneStrategy handler.
#ifndef SKBNF_SERVER_CONTROL_TUNER_CONVERT_H_
#define SKBNF_SERVER_CONTROL_TUNER_CONVERT_H_

#include "server/tuner/tuner.h"
#include "skbnf/v1/control.pb.h"

namespace skbnf::control {

TuneRequest TuneRequestFromProto(const v1::TuneStrategyRequest& req);
void TuneProgressToProto(const TuneProgress& p, v1::TuneProgress* out);
void TuneReportToProto(const TuneReport& r, v1::TuneReport* out);

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CONTROL_TUNER_CONVERT_H_
