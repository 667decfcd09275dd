#include "engine/peer/link_endpoint.h"

#include <algorithm>

#include "engine/notify/notification_header.h"

namespace kvx::engine {

// One message in flight: the sender's spans stay valid until its completion runs, so a
// copy is made only for a message that our reset cancelled.
struct LinkEndpoint::Tracked final : Completion {
  std::shared_ptr<State> state;
  std::span<const std::uint8_t> header;
  std::span<const std::uint8_t> payload;
  Completion* original = nullptr;
  std::uint64_t sequence = 0;

  void onComplete(Status status) override {
    if (!status.isOk() && keptForResend()) {
      delete this;
      return;
    }
    Completion* sender = original;
    delete this;
    sender->onComplete(std::move(status));
  }

  bool keptForResend() {
    sync::MutexLock lock(state->mutex);
    if (!state->resetting) return false;
    auto decoded = decodeMessageHeader(header);
    if (!decoded.isOk() || decoded->kind != MessageKind::kNotification) return false;
    state->cancelled.emplace_back(
        sequence, CancelledMessage{
                      {header.begin(), header.end()}, {payload.begin(), payload.end()}, original});
    return true;
  }
};

LinkEndpoint::LinkEndpoint(std::shared_ptr<Endpoint> inner) : inner_(std::move(inner)) {}

LinkEndpoint::~LinkEndpoint() = default;

void LinkEndpoint::sendMessage(std::span<const std::uint8_t> header,
                               std::span<const std::uint8_t> payload, Completion* completion) {
  auto* tracked = new Tracked();
  tracked->state = state_;
  tracked->header = header;
  tracked->payload = payload;
  tracked->original = completion;
  {
    sync::MutexLock lock(state_->mutex);
    tracked->sequence = state_->nextSequence++;
  }
  inner_->sendMessage(header, payload, tracked);
}

std::vector<CancelledMessage> LinkEndpoint::closeForReset(Deadline deadline) {
  {
    sync::MutexLock lock(state_->mutex);
    state_->resetting = true;
  }
  // Every operation in flight completes before this returns (the Endpoint contract); a
  // message posted on this endpoint meanwhile fails at once and is kept all the same.
  inner_->forceClose(deadline);
  std::vector<std::pair<std::uint64_t, CancelledMessage>> kept;
  {
    sync::MutexLock lock(state_->mutex);
    state_->resetting = false;
    kept.swap(state_->cancelled);
  }
  std::sort(kept.begin(), kept.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<CancelledMessage> out;
  out.reserve(kept.size());
  for (auto& [sequence, message] : kept) out.push_back(std::move(message));
  return out;
}

}  // namespace kvx::engine
