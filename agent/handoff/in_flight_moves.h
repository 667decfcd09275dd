#pragma once

// InFlightMoves: the moves one request has in flight on one side, and what the finished
// ones turned into on the wire. Owned by the request; service thread only.

#include <algorithm>
#include <vector>

#include "agent/handoff/kv_port.h"
#include "kvx/kv_types.h"

namespace kvx::agent::handoff {

class InFlightMoves {
 public:
  void add(MoveId move) { moves_.push_back(move); }
  bool empty() const { return moves_.empty(); }
  // Records a finished move's statistics in `view`.
  void finished(MoveId move, const MoveResult& result, KvRequestStatus& view) {
    std::erase(moves_, move);
    view.descriptors += result.stats.descriptors;
    view.operations += result.stats.operations;
  }
  // Asks every move to stop; each still reports finished() once drained.
  void cancelAll(KvPort& port) const {
    for (MoveId move : moves_) port.cancel(move);
  }

 private:
  std::vector<MoveId> moves_;
};

}  // namespace kvx::agent::handoff
