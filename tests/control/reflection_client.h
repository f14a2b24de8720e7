// SPDX-License-Identifier: BSD-3-Clause
// The client side of grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo (a
// bidirectional stream) over the test protos (protos/grpc_test/health_reflection.proto): the
// reflection tests open it on skbnfd's listeners without a generated reflection stub.
#ifndef SKBNF_TESTS_CONTROL_REFLECTION_CLIENT_H_
#define SKBNF_TESTS_CONTROL_REFLECTION_CLIENT_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/sync_stream.h>

#include <memory>

#include "protos/grpc_test/health_reflection.pb.h"

namespace skbnf::control {

using ReflectionStream = grpc::ClientReaderWriter<grpc_test::ServerReflectionRequest,
                                                  grpc_test::ServerReflectionResponse>;

inline std::unique_ptr<ReflectionStream> OpenReflection(grpc::ChannelInterface* channel,
                                                        grpc::ClientContext* ctx) {
  const grpc::internal::RpcMethod m(
      "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
      grpc::internal::RpcMethod::BIDI_STREAMING);
  return std::unique_ptr<ReflectionStream>(
      grpc::internal::ClientReaderWriterFactory<
          grpc_test::ServerReflectionRequest, grpc_test::ServerReflectionResponse>::Create(channel,
                                                                                           m, ctx));
}

}  // namespace skbnf::control

#endif  // SKBNF_TESTS_CONTROL_REFLECTION_CLIENT_H_
