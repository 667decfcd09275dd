#pragma once

// Counting down a group of operations that succeed or fail together (a chunk's puts, a put
// and its flush, a chunk's pieces):
//   GroupOutcome         the count and the first error; arrive() for each operation's end
//                        yields the group's outcome with the last one.
//   CountdownCompletion  a Completion for such a group: with the last operation it hands the
//                        outcome to finished() and deletes itself. Heap-allocated only.
// Set the count with expect() before posting the first operation. Ends of one group may
// arrive on several threads (an operation that fails at post time ends on the poster's
// thread); the outcome goes to whichever thread ends the last one (for a Completion, under
// the transport's lock: see Completion).

#include <atomic>
#include <cstddef>
#include <optional>

#include "engine/transport/completion.h"
#include "sync/mutex.h"

namespace kvx::engine {

class GroupOutcome {
 public:
  void expect(std::size_t operations) { remaining_.store(operations); }

  // Records one operation's end; the group's outcome (OK, or the first error) once the last
  // has ended, nothing before.
  std::optional<Status> arrive(Status status) {
    if (!status.isOk()) {
      sync::MutexLock lock(mutex_);
      if (error_.isOk()) error_ = std::move(status);
    }
    if (remaining_.fetch_sub(1) != 1) return std::nullopt;
    sync::MutexLock lock(mutex_);
    return std::move(error_);
  }

 private:
  std::atomic<std::size_t> remaining_{0};
  sync::Mutex mutex_;
  Status error_ KVX_GUARDED_BY(mutex_);
};

class CountdownCompletion : public Completion {
 public:
  void expect(std::size_t operations) { group_.expect(operations); }

  void onComplete(Status status) final {
    std::optional<Status> outcome = group_.arrive(std::move(status));
    if (!outcome) return;
    finished(std::move(*outcome));
    delete this;
  }

 protected:
  virtual ~CountdownCompletion() = default;
  // The group's outcome: OK, or the first error of its operations.
  virtual void finished(Status outcome) = 0;

 private:
  GroupOutcome group_;
};

}  // namespace kvx::engine
