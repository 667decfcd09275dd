// Fuzz target for peers' packed remote keys, through the real UCX calls: the input is the UCX
// part of a packed key (what a peer's metadata carries inside kvx's key frame), framed as a
// peer would frame it, checked with Transport::checkPeerKeys (kvx-ucx-probe unpacks it on an
// endpoint to a live worker in this process) and, when taken, unpacked by this process's UCX.
// Properties:
//   - this process never crashes, whatever the bytes;
//   - a refusal is INVALID_ARGUMENT or TIMED_OUT with a message;
//   - a key the probe took unpacks here too (the probe and this process agree).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/transport/transport_registry.h"
#include "engine/transport/ucx/ucx_remote_key.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace kvx;
using namespace kvx::engine;

struct Pair {
  std::unique_ptr<Transport> local;
  std::unique_ptr<Transport> peer;
  std::shared_ptr<Endpoint> endpoint;
  ~Pair() {  // the peer does not progress: do not wait for it at exit
    if (endpoint)
      endpoint->forceClose(std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
  }
};

std::unique_ptr<Transport> shmTransport(const char* name) {
  TransportOptions options;
  options.agentName = name;
  options.transports = "shm";
  auto t = createTransport("ucx", options);
  KVX_FUZZ_CHECK(t.isOk());
  return std::move(t).value();
}

Pair& pair() {
  static Pair made;
  if (made.endpoint == nullptr) {
    made.local = shmTransport("fuzz-local");
    made.peer = shmTransport("fuzz-peer");
    auto endpoint = made.local->connect(made.peer->localAddress(), [](const Status&) {});
    KVX_FUZZ_CHECK(endpoint.isOk());
    made.endpoint = std::move(endpoint).value();
  }
  return made;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Pair& p = pair();
  const std::vector<std::uint8_t> packed =
      ucx::packRemoteKey(0x10000, 4096, std::span<const std::uint8_t>(data, size));
  const PeerKey key{packed, MemoryKind::kHost};
  const Status verdict = p.local->checkPeerKeys(p.peer->localAddress(), std::span(&key, 1));
  auto unpacked = p.endpoint->unpackRemoteKey(packed, MemoryKind::kHost);
  if (!verdict.isOk()) {
    KVX_FUZZ_CHECK(verdict.code() == StatusCode::kInvalidArgument ||
                   verdict.code() == StatusCode::kTimedOut);
    KVX_FUZZ_CHECK(!verdict.message().empty());
    KVX_FUZZ_CHECK(!unpacked.isOk());  // refused here too, from the cached-or-new verdict
    return 0;
  }
  KVX_FUZZ_CHECK(unpacked.isOk());
  return 0;
}
