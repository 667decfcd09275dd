#pragma once

// StagedShare: a part of one transfer start that moves its bytes through staging buffers
// rather than as plain RMA operations. Transfer gets its shares from its StagingAccess
// (staging_access.h) and runs each beside its direct operations, counted as one operation in
// flight; engine/staged/ implements them (StagedRun: this side's GPU memory;
// RemoteStagedRun: the peer's).
//
// Contract of every share: begin() starts it and `done` fires exactly once with its outcome,
// from any thread but never in transport completion context, only after everything it
// issued has completed (possibly before begin() returns); an error returned by begin() means
// nothing started and `done` will not fire. cancel() makes the outcome CANCELLED unless it
// failed or finished already. deliverCompleted() hands queued completions on; the owner
// calls it, outside every transport lock, after the share's `notify` woke it.
// Threads: any thread may call any member, never in transport completion context.

#include <functional>

#include "kvx/status.h"

namespace kvx::engine {

class StagedShare {
 public:
  virtual ~StagedShare() = default;
  virtual Status begin(std::function<void(Status)> done) = 0;
  virtual void cancel() = 0;
  virtual bool deliverCompleted() = 0;
};

}  // namespace kvx::engine
