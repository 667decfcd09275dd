#include "engine/staged/staged_rma_wire.h"

#include <algorithm>

#include "engine/transport/countdown_completion.h"

namespace kvx::engine {

// The RMA operations of one chunk: with the last, it queues the chunk's outcome on the wire.
struct StagedRmaWire::Chunk final : CountdownCompletion {
  StagedRmaWire* wire = nullptr;
  gpu::WireCallback done;

  void finished(Status outcome) override { wire->completed(std::move(done), std::move(outcome)); }
};

StagedRmaWire::StagedRmaWire(std::shared_ptr<PeerLink> link, std::span<const PlannedOp> ops,
                             std::vector<const RemoteKey*> keys, bool write,
                             const StagingLease& lease, std::function<void()> notify)
    : link_(std::move(link)),
      ops_(ops),
      keys_(std::move(keys)),
      write_(write),
      lease_(lease),
      notify_(std::move(notify)) {
  starts_.reserve(ops_.size());
  std::uint64_t at = 0;
  for (const PlannedOp& op : ops_) {
    starts_.push_back(at);
    at += op.length;
  }
}

StagedRmaWire::~StagedRmaWire() = default;

void StagedRmaWire::postWire(std::byte* staging, std::uint64_t offset, std::size_t length,
                             gpu::WireCallback done) {
  const TransportMemory* registration = lease_.registrationOf(staging);
  if (registration == nullptr || length == 0) {
    done(internalError("staged wire: chunk at byte " + std::to_string(offset) +
                       " is not in a registered staging buffer"));
    return;
  }
  // The chunk's operations: from the last one starting at or before `offset`, while they
  // start before its end.
  std::vector<RmaOp> batch;
  std::size_t index = static_cast<std::size_t>(
      std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin() - 1);
  std::size_t placed = 0;
  while (placed < length && index < ops_.size()) {
    const PlannedOp& op = ops_[index];
    const std::uint64_t into = offset + placed - starts_[index];
    const std::size_t take =
        static_cast<std::size_t>(std::min<std::uint64_t>(op.length - into, length - placed));
    batch.push_back(
        RmaOp{staging + placed, registration, op.remoteAddress + into, keys_[op.remoteSlot], take});
    placed += take;
    ++index;
  }
  if (placed != length) {
    done(internalError("staged wire: chunk [" + std::to_string(offset) + "+" +
                       std::to_string(length) + ") runs past the staged operations"));
    return;
  }
  auto* chunk = new Chunk();
  chunk->wire = this;
  chunk->done = std::move(done);
  chunk->expect(batch.size());
  link_->endpoint().postBatch(batch, write_, chunk);
  // Posted from a copy engine's thread, perhaps: the progress driver may be asleep, and the
  // operations need it. (The wire is still alive here: only this call's caller, the
  // pipeline's event runner, can end the move.)
  notify_();
}

void StagedRmaWire::completed(gpu::WireCallback done, Status status) {
  // Once the outcome is queued another thread may deliver it, finish the move and destroy
  // this wire: notify through a copy.
  const std::function<void()> notify = notify_;
  {
    sync::MutexLock lock(mutex_);
    outcomes_.push_back(Outcome{std::move(done), std::move(status)});
  }
  notify();
}

bool StagedRmaWire::deliverCompleted() {
  std::deque<Outcome> ready;
  {
    sync::MutexLock lock(mutex_);
    ready.swap(outcomes_);
  }
  for (Outcome& outcome : ready) outcome.done(std::move(outcome.status));
  return !ready.empty();
}

}  // namespace kvx::engine
