#pragma once

// ProgressHooks: how a part of the engine reaches the engine's progress without owning it.
// `kick` wakes the progress thread after work was queued for it (a no-op when the caller
// drives progress). `step` runs one round of progress; it is set only when the caller drives
// progress (ProgressMode::kCaller), where a wait must make progress itself instead of
// sleeping until the progress thread finishes the work.
//
// Threads: both may be called from any thread that holds no engine lock.

#include <functional>

namespace kvx::engine {

struct ProgressHooks {
  std::function<void()> kick;
  std::function<bool()> step;

  bool callerDriven() const { return static_cast<bool>(step); }
};

}  // namespace kvx::engine
