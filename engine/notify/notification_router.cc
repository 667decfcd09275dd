#include "engine/notify/notification_router.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace kvx::engine {

NotificationRouter::NotificationRouter(std::string self, PeerDirectory& peers, StagingSink staging,
                                       ProgressHooks progress)
    : self_(std::move(self)),
      peers_(peers),
      staging_(std::move(staging)),
      progress_(std::move(progress)),
      header_(encodeNotificationHeader(self_)) {}

Status NotificationRouter::send(const std::string& peer, std::string payload) {
  KVX_ASSIGN_OR_RETURN(auto remote, peers_.find(peer));
  // During a reset of the link it waits for the next link, not the caller.
  KVX_RETURN_IF_ERROR(remote->sendOwned(header_, {payload.begin(), payload.end()},
                                        "notification to '" + peer + "'"));
  progress_.kick();
  return Status::ok();
}

void NotificationRouter::setHandler(Handler handler) {
  {
    sync::MutexLock lock(handlerMutex_);
    handler_ = handler ? std::make_shared<const Handler>(std::move(handler)) : nullptr;
    hasHandler_.store(handler_ != nullptr);
  }
  progress_.kick();  // hands over what is already queued
}

Result<Notification> NotificationRouter::wait(Deadline deadline) {
  if (!progress_.callerDriven()) return inbox_.waitTake(deadline);
  while (true) {
    if (auto n = inbox_.tryTake()) return std::move(*n);
    if (inbox_.closed())
      return cancelled("the agent is closing: no notification will be waited for");
    if (Clock::now() >= deadline) return timedOut("no notification arrived before the deadline");
    progress_.step();
  }
}

void NotificationRouter::onMessage(std::span<const std::uint8_t> header,
                                   std::span<const std::uint8_t> payload) {
  auto decoded = decodeMessageHeader(header);
  if (!decoded.isOk()) {
    spdlog::warn("{}: dropped a data-path message: {}", self_, decoded.status().toString());
    return;
  }
  if (decoded->kind != MessageKind::kNotification) {
    if (staging_) staging_(*decoded, payload);
    return;
  }
  inbox_.push(
      Notification{std::move(decoded->sender),
                   std::string(reinterpret_cast<const char*>(payload.data()), payload.size())});
}

bool NotificationRouter::deliver() {
  // Checked without the lock: most engines never set a handler, and this runs every round.
  if (!hasHandler_.load(std::memory_order_relaxed)) return false;
  std::shared_ptr<const Handler> handler;
  {
    sync::MutexLock lock(handlerMutex_);
    handler = handler_;
  }
  if (!handler) return false;
  bool any = false;
  while (auto notification = inbox_.tryTake()) {
    (*handler)(std::move(*notification));
    any = true;
  }
  return any;
}

}  // namespace kvx::engine
