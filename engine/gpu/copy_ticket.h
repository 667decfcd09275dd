#pragma once

// CopyTicket: the outcome of one CopyEngine copy, to poll or to wait for, for callers that
// prefer that to a callback (tests, one-off copies at registration). Shared between the
// caller and the engine's callback, so either may let go first.
//
// Thread safety: every member may be called from any thread.

#include <chrono>
#include <condition_variable>
#include <memory>
#include <optional>

#include "engine/gpu/copy_engine.h"
#include "sync/mutex.h"

namespace kvx::engine::gpu {

class CopyTicket {
 public:
  // Starts `request` on `engine`; the ticket completes when the copy's callback fires.
  static std::shared_ptr<CopyTicket> start(CopyEngine& engine, const CopyRequest& request);

  bool ready() const;

  // The copy's outcome, or TIMED_OUT if it has not completed by `deadline` (the copy goes on;
  // its buffers must stay valid until the ticket is ready).
  Status wait(std::chrono::steady_clock::time_point deadline) const;

 private:
  void complete(Status status);

  mutable sync::Mutex mutex_;
  mutable std::condition_variable completed_;
  std::optional<Status> outcome_ KVX_GUARDED_BY(mutex_);
  std::string what_;  // the request, for the timeout message
};

}  // namespace kvx::engine::gpu
