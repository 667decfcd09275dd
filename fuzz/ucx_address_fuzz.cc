// Fuzz target for peers' UCX worker addresses, through the real UCX calls: the input is the
// UCX part of an address (what a peer's hello carries inside kvx's frame), framed as a peer
// would frame it and handed to UcxTransport::connect, which has kvx-ucx-probe check it and
// then calls ucp_ep_create in this process. Properties:
//   - this process never crashes, whatever the bytes (the probe takes the crash instead);
//   - a refusal is INVALID_ARGUMENT (UCX refused or crashed in the probe) or TIMED_OUT (the
//     probe hung), with a message.
// A probe is a process start per input: slow for libFuzzer, but it is the real UCX.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "engine/transport/transport_registry.h"
#include "engine/transport/ucx/ucx_frame.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace kvx;
using namespace kvx::engine;

Transport& transport() {
  static std::unique_ptr<Transport> made = [] {
    TransportOptions options;
    options.agentName = "fuzz";
    options.transports = "shm";
    auto t = createTransport("ucx", options);
    KVX_FUZZ_CHECK(t.isOk());
    return std::move(t).value();
  }();
  return *made;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto framed = ucx::frame(ucx::kAddressMagic, std::span<const std::uint8_t>(data, size));
  auto endpoint = transport().connect(framed, [](const Status&) {});
  if (!endpoint.isOk()) {
    const StatusCode code = endpoint.status().code();
    KVX_FUZZ_CHECK(code == StatusCode::kInvalidArgument || code == StatusCode::kTimedOut);
    KVX_FUZZ_CHECK(!endpoint.status().message().empty());
    return 0;
  }
  (*endpoint)->forceClose(std::chrono::steady_clock::now() + std::chrono::milliseconds(200));
  return 0;
}
