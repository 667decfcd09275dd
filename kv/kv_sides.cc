#include "kv/kv_sides.h"

#include <spdlog/spdlog.h>

namespace kvx::kv {

KvSides::KvSides(const KvAgentOptions& options, LocalPool& local,
                 std::function<void(std::function<void()>)> postToLoop)
    : context_{
          options.agent.name,    *local.port, local.pool->description(), *local.allocator, board_,
          std::move(postToLoop), options,     local.canary.get()} {
  if (options.role == KvRole::kPrefill) {
    prefill_ = std::make_unique<handoff::PrefillSide>(context_);
  } else {
    decode_ = std::make_unique<handoff::DecodeSide>(context_);
  }
}

void KvSides::onPeerReady(const std::string& peer, const KvPeer& entry,
                          handoff::PeerWriter writer) {
  // Until the peer says how many blocks it has free, all of them: a request it cannot take
  // is refused as retryable and waits for its next capacity message.
  if (prefill_) prefill_->onPeerReady(peer, entry.totalBlocks, entry.totalBlocks, entry.kvHeads);
  if (decode_) decode_->onPeerReady(peer, std::move(writer));
}

void KvSides::onPeerGone(const std::string& peer, const Status& why) {
  if (prefill_) prefill_->onPeerGone(peer, why);
  if (decode_) decode_->onPeerGone(peer, why);
}

void KvSides::onMessage(const std::string& peer, const handoff::KvMessage& message) {
  if (prefill_) prefill_->onMessage(peer, message);
  if (decode_) decode_->onMessage(peer, message);
}

bool KvSides::postsNoMove(const handoff::KvMessage& message) {
  using namespace handoff;
  return std::holds_alternative<PlaceMsg>(message) || std::holds_alternative<DataMsg>(message) ||
         std::holds_alternative<ConfirmMsg>(message) ||
         std::holds_alternative<CapacityMsg>(message) ||
         std::holds_alternative<RefusedMsg>(message) ||
         std::holds_alternative<AbortAckMsg>(message);
}

void KvSides::onTick() {
  if (prefill_) prefill_->onTick();
  if (decode_) decode_->onTick();
}

void KvSides::stopAccepting() {
  if (decode_) decode_->stopAccepting();
}

void KvSides::failAll(const Status& why) {
  if (prefill_) prefill_->failAll(why);
  if (decode_) decode_->failAll(why);
}

void KvSides::endApplicationWaits(const Status& why) {
  if (prefill_) prefill_->failAwaitingProducer(why);
  if (decode_) decode_->releaseHandedOut();
}

void KvSides::releaseAllAndCheck() {
  if (!decode_) return;
  if (const std::uint64_t held = decode_->heldBlocks(); held > 0) {
    spdlog::warn(
        "{}: {} blocks held for lost prefill agents go back to the pool at shutdown without "
        "proof that those agents stopped writing into them; memory the application owns "
        "(pool tensors) should not be reused before they have ended",
        context_.name, held);
  }
  decode_->releaseHeld(Clock::time_point::max());
  decode_->checkFreeBlocks();
}

std::size_t KvSides::liveRequests() const {
  return prefill_ ? prefill_->liveRequests() : decode_->liveRequests();
}

std::uint64_t KvSides::availableBlocks() const {
  return decode_ ? decode_->availableBlocks() : context_.allocator.freeBlocks();
}

}  // namespace kvx::kv
