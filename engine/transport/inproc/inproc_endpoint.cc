#include "engine/transport/inproc/inproc_endpoint.h"

#include <cstring>
#include <string>

#include "engine/transport/inproc/inproc_fabric.h"
#include "engine/transport/inproc/inproc_transport.h"

namespace kvx::engine::inproc {

InprocEndpoint::InprocEndpoint(InprocTransport& owner, std::uint64_t target,
                               EndpointErrorHandler onError)
    : owner_(owner), target_(target), onError_(std::move(onError)) {}

Result<std::unique_ptr<RemoteKey>> InprocEndpoint::unpackRemoteKey(
    std::span<const std::uint8_t> packed, MemoryKind /*kind*/) {
  if (packed.size() != sizeof(std::uint64_t)) {
    return invalidArgument("inproc remote key must be 8 bytes, got " +
                           std::to_string(packed.size()));
  }
  std::uint64_t id = 0;
  std::memcpy(&id, packed.data(), sizeof(id));
  if (!InprocFabric::instance().hasMemory(id)) {
    return notFound("inproc remote key names memory " + std::to_string(id) +
                    ", which is not registered");
  }
  return std::unique_ptr<RemoteKey>(new InprocRemoteKey(id));
}

bool InprocEndpoint::rejectIfUnusable(Completion* completion) {
  if (closed_.load()) {
    completion->onComplete(failedPrecondition("inproc endpoint is closed"));
    return true;
  }
  if (failed_.load()) {
    completion->onComplete(peerFailed("inproc peer " + std::to_string(target_) + " is gone"));
    return true;
  }
  return false;
}

void InprocEndpoint::copy(const RmaOp& op, bool toRemote, Completion* completion) {
  if (rejectIfUnusable(completion)) return;
  if (op.length == 0 || op.localAddress == nullptr || op.localMemory == nullptr) {
    completion->onComplete(invalidArgument(
        "inproc operation needs a local buffer, its registration and a non-zero length (got " +
        std::to_string(op.length) + " bytes at " + (op.localAddress ? "an address" : "null") +
        ")"));
    return;
  }
  const auto local = reinterpret_cast<std::uint64_t>(op.localAddress);
  const auto base = reinterpret_cast<std::uint64_t>(op.localMemory->address());
  if (local < base || op.length > op.localMemory->length() ||
      local - base > op.localMemory->length() - op.length) {
    completion->onComplete(invalidArgument("local range [" + std::to_string(local) + "+" +
                                           std::to_string(op.length) +
                                           ") is outside its registration"));
    return;
  }
  const auto* key = dynamic_cast<const InprocRemoteKey*>(op.remoteKey);
  if (key == nullptr) {
    completion->onComplete(invalidArgument("remote key is not an inproc key"));
    return;
  }
  bool closedMeanwhile = false;
  const InprocFabric::Access access = InprocFabric::instance().withRemoteRange(
      owner_.fabricId(), key->memoryId(), op.remoteAddress, op.length, [&](void* remote) {
        // close() sets closed_ under this lock: a copy either finishes before it returns or
        // does not start.
        if (closed_.load()) {
          closedMeanwhile = true;
          return false;
        }
        if (toRemote) {
          std::memcpy(remote, op.localAddress, op.length);
        } else {
          std::memcpy(op.localAddress, remote, op.length);
        }
        return true;
      });
  if (closedMeanwhile) {
    completion->onComplete(failedPrecondition("inproc endpoint is closed"));
    return;
  }
  if (access == InprocFabric::Access::kRefused) {
    completion->onComplete(
        peerFailed("inproc peer " + std::to_string(target_) + " dropped this transport"));
    return;
  }
  if (access == InprocFabric::Access::kOutside) {
    completion->onComplete(invalidArgument(
        "remote range [" + std::to_string(op.remoteAddress) + "+" + std::to_string(op.length) +
        ") is not inside registered memory " + std::to_string(key->memoryId())));
    return;
  }
  owner_.queueCompletion(this, completion, Status::ok());
}

void InprocEndpoint::put(const RmaOp& op, Completion* completion) { copy(op, true, completion); }

void InprocEndpoint::get(const RmaOp& op, Completion* completion) { copy(op, false, completion); }

void InprocEndpoint::flush(Completion* completion) {
  if (rejectIfUnusable(completion)) return;
  owner_.queueCompletion(this, completion, Status::ok());
}

void InprocEndpoint::sendMessage(std::span<const std::uint8_t> header,
                                 std::span<const std::uint8_t> payload, Completion* completion) {
  if (rejectIfUnusable(completion)) return;
  std::vector<std::uint8_t> h(header.begin(), header.end());
  std::vector<std::uint8_t> p(payload.begin(), payload.end());
  const bool delivered = InprocFabric::instance().withTransport(
      target_, [&](InprocTransport& peer) { peer.deliverMessage(std::move(h), std::move(p)); });
  if (!delivered) {
    completion->onComplete(peerFailed("inproc peer " + std::to_string(target_) + " is gone"));
    return;
  }
  owner_.queueCompletion(this, completion, Status::ok());
}

void InprocEndpoint::close(bool force) {
  InprocFabric::instance().exclusive([&] { closed_.store(true); });
  // Inproc operations finish at post time; whatever is still queued fires now, so that the
  // caller sees every completion before close returns, as the contract requires.
  (void)force;
  owner_.drainCompletions(this);
}

bool InprocEndpoint::detectPeerLoss() {
  if (closed_.load() || failed_.load()) return false;
  const bool alive = InprocFabric::instance().withTransport(target_, [](InprocTransport&) {});
  if (alive || failed_.exchange(true)) return false;  // reported once, by one thread
  if (onError_) onError_(peerFailed("inproc peer " + std::to_string(target_) + " is gone"));
  return true;
}

}  // namespace kvx::engine::inproc
