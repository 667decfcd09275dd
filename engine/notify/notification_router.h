#pragma once

// NotificationRouter: the data-path messages of one engine. It sends bare notifications to
// peers, and takes every message the transport receives: a notification is queued in the
// inbox, from which deliver() hands it to the handler while one is set (else it waits for
// wait() or inbox().take()); a staging message goes on to the staging sink; a message whose
// header cannot be read is logged and dropped.
//
// Owner: the Engine. Threads: onMessage() runs in the transport's message handler and only
// queues; deliver() on the progress thread (or the caller's, in caller-driven mode), which
// is where the handler runs, outside every kvx lock; the other members from any thread.
// Lock: handlerMutex_, a leaf that guards the handler's pointer and is never held while the
// handler runs. Lifetime: send() REQUIRES the peer directory; receiving needs nothing else,
// so the engine keeps the router until its transport is gone.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/notify/notification_header.h"
#include "engine/notify/notification_inbox.h"
#include "engine/peer/peer_directory.h"
#include "engine/progress/progress_hooks.h"
#include "kvx/result.h"
#include "kvx/transfer.h"
#include "sync/mutex.h"

namespace kvx::engine {

class NotificationRouter {
 public:
  // Takes a staging request or reply; called in the transport's message handler.
  using StagingSink =
      std::function<void(const MessageHeader& header, std::span<const std::uint8_t> payload)>;
  using Handler = std::function<void(Notification)>;

  // `self`: this agent's name, which every notification it sends carries.
  NotificationRouter(std::string self, PeerDirectory& peers, StagingSink staging,
                     ProgressHooks progress);

  NotificationRouter(const NotificationRouter&) = delete;
  NotificationRouter& operator=(const NotificationRouter&) = delete;

  // The header of this agent's notifications (transfers send it after their data).
  const std::vector<std::uint8_t>& header() const { return header_; }
  NotificationInbox& inbox() { return inbox_; }

  // Engine::sendNotification, setNotificationHandler and waitNotification.
  Status send(const std::string& peer, std::string payload);
  void setHandler(Handler handler) KVX_EXCLUDES(handlerMutex_);
  Result<Notification> wait(Deadline deadline);

  // The transport's message handler.
  void onMessage(std::span<const std::uint8_t> header, std::span<const std::uint8_t> payload);
  // Hands queued notifications to the handler, if one is set; true if there were any.
  bool deliver() KVX_EXCLUDES(handlerMutex_);

 private:
  const std::string self_;
  PeerDirectory& peers_;
  const StagingSink staging_;
  const ProgressHooks progress_;
  const std::vector<std::uint8_t> header_;
  NotificationInbox inbox_;

  sync::Mutex handlerMutex_;
  std::shared_ptr<const Handler> handler_ KVX_GUARDED_BY(handlerMutex_);
  std::atomic<bool> hasHandler_{false};  // handler_ is set, read without the lock
};

}  // namespace kvx::engine
