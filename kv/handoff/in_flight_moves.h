#pragma once

// InFlightMoves: the moves one request has in flight on one side, and what the finished
// ones turned into on the wire (descriptors, operations). Owned by the request; service
// thread only.

#include <algorithm>
#include <vector>

#include "kv/handoff/kv_port.h"

namespace kvx::kv::handoff {

class InFlightMoves {
 public:
  void add(MoveId move) { moves_.push_back(move); }
  bool empty() const { return moves_.empty(); }
  // Forgets a finished move and adds what it turned into on the wire to the totals.
  void finished(MoveId move, const MoveResult& result) {
    std::erase(moves_, move);
    descriptors_ += result.stats.descriptors;
    operations_ += result.stats.operations;
  }
  std::uint64_t descriptors() const { return descriptors_; }
  std::uint64_t operations() const { return operations_; }
  // Asks every move to stop; each still reports finished() once drained.
  void cancelAll(KvPort& port) const {
    for (MoveId move : moves_) port.cancel(move);
  }

 private:
  std::vector<MoveId> moves_;
  std::uint64_t descriptors_ = 0;
  std::uint64_t operations_ = 0;
};

}  // namespace kvx::kv::handoff
