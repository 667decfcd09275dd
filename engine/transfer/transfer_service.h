#pragma once

// TransferService: the transfers of one engine, from the request or the prepared lists they
// are made from to their release: planning (regions resolved, data paths chosen, staging
// readied), posting, polling, waiting and cancelling, and failing the transfers of a peer
// that left. Engine's transfer members forward here; their contracts are in engine.h.
//
// Owner: the Engine. Threads: any thread may call any member; pump() runs on the progress
// thread (or the caller's, in caller-driven mode). Locks: the service has none of its own
// beyond its two tables' (ListTable, TransferTable), each a lock of its own that is never
// held while a transfer is advanced or a peer's link reset. A wait drives progress itself in
// caller-driven mode (ProgressHooks::step) and sleeps otherwise.
// Lifetime: REQUIRES the registry, the peer directory and the staging outlive it.

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/memory/memory_registry.h"
#include "engine/peer/peer_directory.h"
#include "engine/progress/progress_hooks.h"
#include "engine/transfer/data_path.h"
#include "engine/transfer/list_table.h"
#include "engine/transfer/staging_access.h"
#include "engine/transfer/transfer.h"
#include "engine/transfer/transfer_table.h"
#include "kvx/transfer.h"

namespace kvx::engine {

struct TransferServiceOptions {
  std::string self;  // this agent's name, for log lines
  std::uint32_t maxOpsInFlight = 256;
  std::uint64_t maxOpBytes = 8u << 20;
  std::chrono::milliseconds cancelGrace{200};
  std::vector<std::uint8_t> notificationHeader;  // sent before each transfer's notification
};

class TransferService {
 public:
  TransferService(TransferServiceOptions options, MemoryRegistry& registry, PeerDirectory& peers,
                  StagingAccess& staging, GpuReach reach, ProgressHooks progress);

  TransferService(const TransferService&) = delete;
  TransferService& operator=(const TransferService&) = delete;

  Result<TransferId> create(const TransferRequest& request);
  Result<ListId> prepareLocalList(std::span<const MemoryRange> ranges);
  Result<ListId> prepareRemoteList(const std::string& peer, std::span<const MemoryRange> ranges);
  Result<TransferId> make(TransferOp op, ListId localList,
                          std::span<const std::uint32_t> localIndices, ListId remoteList,
                          std::span<const std::uint32_t> remoteIndices,
                          std::optional<std::string> notification);
  Status releaseList(ListId list);
  Status post(TransferId id, Transfer::FinishedCallback onFinished);
  TransferStatus poll(TransferId id) const;
  Status wait(TransferId id, Deadline deadline);
  Status cancel(std::span<const TransferId> ids);
  Result<TransferStats> stats(TransferId id) const;
  Status release(TransferId id);

  // Asks every pending transfer to `peer` to end as failed with `why` (a peer that left).
  void failTransfersOf(const RemotePeer& peer, const Status& why);
  // Advances the transfers that completions flagged; true if there were any.
  bool pump() { return table_.pump(); }

  // For the engine's shutdown, in this order: cancelAll() asks every pending transfer to
  // end with `why`; waitAll() waits (driving progress in caller-driven mode) until they did
  // or `deadline` passed; stopWaking() once the progress thread stopped, as from then on only
  // the shutting-down thread completes operations; clear() drops the lists and transfers.
  void cancelAll(const Status& why);
  void waitAll(Deadline deadline);
  void stopWaking() { table_.setWake(nullptr); }
  void clear();

 private:
  // Cancels the pending transfers (of `only`, when set) with `why`.
  void cancelPending(const Status& why, const RemotePeer* only);
  Result<TransferId> add(std::shared_ptr<RemotePeer> peer, TransferOp op, TransferPlan plan,
                         std::optional<std::string> notification);
  // Waits until `transfer` is not pending or the deadline passed.
  void waitFinished(const Transfer& transfer, Deadline deadline);
  // Waits for all of `transfers` (one deadline for the set); returns those still pending.
  std::vector<std::shared_ptr<Transfer>> waitAllFinished(
      std::vector<std::shared_ptr<Transfer>> transfers, Deadline deadline);

  const TransferServiceOptions options_;
  MemoryRegistry& registry_;
  PeerDirectory& peers_;
  StagingAccess& staging_;
  const GpuReach reach_;
  const ProgressHooks progress_;

  ListTable lists_;
  TransferTable table_;
};

}  // namespace kvx::engine
