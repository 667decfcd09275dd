#pragma once

// Completion: where a transport reports the end of one posted operation.

#include "kvx/status.h"

namespace kvx::engine {

// A transport calls onComplete() exactly once per operation posted with this completion:
// either before the posting call returns (immediate completion, or an error detected at
// post time) or later, from inside Transport::progress() or Endpoint::close().
//
// onComplete() runs with the transport's internal lock held: it must not call back into the
// transport. Update counters or flags and let the owner act on them after progress returns.
class Completion {
 public:
  virtual void onComplete(Status status) = 0;

 protected:
  ~Completion() = default;
};

}  // namespace kvx::engine
