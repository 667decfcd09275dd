#pragma once

// StagingAccess: the one way a transfer reaches staging, for the operations of its plan that
// move through host buffers rather than as plain RMA (data_path.h: staged locally, remotely,
// or on both sides). The engine's StagingHost (engine/staged/) implements it; a transfer
// sees neither the staging buffers nor the client of peers' windows, only the shares this
// interface makes for it.
//
// Threads: any thread may call any member, never in transport completion context.
// Lifetime: REQUIRES it outlives every transfer made with it, and every share it made.

#include <functional>
#include <memory>
#include <vector>

#include "engine/peer/peer_link.h"
#include "engine/peer/remote_peer.h"
#include "engine/transfer/staged_share.h"
#include "engine/transfer/transfer_plan.h"
#include "kvx/result.h"
#include "kvx/transfer.h"

namespace kvx::engine {

class StagingAccess {
 public:
  // Readies what `plan`'s staged operations need on this side (the copy engine of its
  // device, a set of staging buffers) when the transfer is made, so that its first start
  // allocates nothing; why not when that fails.
  virtual Status prepare(const TransferPlan& plan) = 0;

  // The share of one start that moves `plan.stagedOps` (this side's GPU memory) through
  // this side's staging buffers over `link`. `keys`: the plan's remote keys unpacked on
  // `link`; `notify` asks the transfer to call deliverCompleted() soon. REQUIRES: `plan`
  // has staged operations and outlives the share.
  virtual Result<std::unique_ptr<StagedShare>> localShare(const TransferPlan& plan, TransferOp op,
                                                          std::shared_ptr<PeerLink> link,
                                                          std::vector<const RemoteKey*> keys,
                                                          std::function<void()> notify) = 0;

  // The share of one start that moves `plan.remoteStagedOps` and `plan.bothStagedOps` (the
  // peer's GPU memory) through `peer`'s staging window. REQUIRES: `plan` has such
  // operations and outlives the share.
  virtual Result<std::unique_ptr<StagedShare>> windowShare(const TransferPlan& plan, TransferOp op,
                                                           std::shared_ptr<RemotePeer> peer,
                                                           std::shared_ptr<PeerLink> link,
                                                           std::function<void()> notify) = 0;

 protected:
  ~StagingAccess() = default;
};

}  // namespace kvx::engine
