// kvx-test-labels: ucx
// The transport conformance suite on UCX over tcp (loopback), plus what is UCX-specific.
#include "tests/engine/transport/transport_conformance.h"

namespace kvx::test {

ConformanceConfig conformanceConfig() {
  ConformanceConfig config;
  config.transport = "ucx";
  config.options.transports = "tcp";
  config.options.netDevices = "lo";
  config.detectsPeerLoss = true;
  return config;
}

namespace conformance {

TEST_CASE("ucx/tcp: the endpoint runs over tcp on lo", "[ucx]") {
  Link link;
  INFO("description: " << link.endpoint->description());
  CHECK(link.endpoint->description().find("tcp/lo") != std::string::npos);
}

TEST_CASE("ucx/tcp: CUDA memory is refused with UNIMPLEMENTED when UCX lacks CUDA", "[ucx]") {
  std::unique_ptr<engine::Transport> transport = makeTransport("ucx-cuda");
  if (transport->supportsMemoryKind(MemoryKind::kCuda)) {
    WARN("this UCX supports CUDA memory; nothing to check");
    return;
  }
  std::vector<std::uint8_t> bytes(4096);
  auto registered = transport->registerMemory(bytes.data(), bytes.size(), MemoryKind::kCuda, 0);
  REQUIRE(registered.status().code() == StatusCode::kUnimplemented);
  CHECK(registered.status().message().find("without") != std::string::npos);
  auto allocated = transport->allocateMemory(4096, MemoryKind::kCuda, 0);
  CHECK(allocated.status().code() == StatusCode::kUnimplemented);
}

TEST_CASE("ucx/tcp: a remote range outside the peer's region is rejected", "[ucx]") {
  Link link;
  CountingCompletion rejected;
  link.endpoint->put(link.op(0, link.remote.bytes.size() - 100, 4096), &rejected);
  REQUIRE(rejected.count() == 1);
  CHECK(rejected.firstError().code() == StatusCode::kInvalidArgument);
}

}  // namespace conformance
}  // namespace kvx::test
