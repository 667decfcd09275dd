#pragma once

// Transfer: one planned transfer to one peer, and its state machine:
//   idle -> posting ops (windowed) -> flushing -> notifying -> done
//                  \-> (error or cancel) -> draining in-flight ops -> failed
// A finished transfer may be started again (repost). Staged operations run as StagedShares
// beside the direct ones, each counted as one operation in flight, made by the engine's
// StagingAccess at each start: one for local GPU memory the transport cannot move, one for
// the peer's GPU memory served through its staging window. The flush, and so the notification,
// waits for all of them; a remote staged write reports only once the peer confirmed every copy into
// its device.
//
// Threads: start(), advance() and requestCancel() may be called from any thread; they
// serialise on the transfer's mutex. Completions arrive on the progress thread with the
// transport's lock held: they touch only atomics and hand the transfer to the listener,
// which calls advance() later, outside the transport's lock. One advance() posts at most a
// turn's worth of operations (16 MiB copied inside the post, or 4,096 operations), then
// queues the transfer with the listener for its next turn, so transfers in flight share the
// link round-robin and post() returns after one turn even where operations complete inline
// (shared memory).
// The window of operations in flight is maxOpsInFlight, or fewer where the plan's operations
// are large: at most 64 MiB in flight per transfer, so one big transfer cannot queue
// gigabytes on the endpoint ahead of the transfers posted after it.
// Guarantees: first error wins; the terminal state is reached exactly once per start, and
// only after every posted operation has completed (so no byte lands after it is reported).
// A reset of the peer's link by this agent (RemotePeer::resetLink, to cancel another
// transfer whose operations were stuck) fails every operation in flight on it, this
// transfer's too. Such a failure is not this transfer's: once its operations drained, it
// posts all of them again on the next link (writing or reading the same bytes again is
// harmless), at most kMaxRelinks times per start; after that, or for a transfer with staged
// operations (whose copies cannot be replayed from here), it fails with TRANSPORT_ERROR
// naming the reset.

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/memory/memory_registry.h"
#include "engine/peer/remote_peer.h"
#include "engine/transfer/staged_share.h"
#include "engine/transfer/staging_access.h"
#include "engine/transfer/transfer_plan.h"
#include "engine/transport/completion.h"
#include "kvx/transfer.h"
#include "sync/mutex.h"

namespace kvx::engine {

class Transfer;

class TransferListener {
 public:
  // A completion arrived: call transfer->advance() soon, on a thread that holds no
  // transport lock. Called from completion context.
  virtual void needsAttention(std::shared_ptr<Transfer> transfer) = 0;
  // The same from outside the transport's progress (a copy engine's thread, or a thread
  // that posted and saw an inline completion): also wakes the progress driver if it sleeps.
  virtual void needsAttentionWoken(std::shared_ptr<Transfer> transfer) = 0;
  // The transfer reached done or failed (called once per start, from advance()).
  virtual void finished(Transfer& transfer) = 0;

 protected:
  ~TransferListener() = default;
};

class Transfer : public std::enable_shared_from_this<Transfer> {
 public:
  // `staging` makes the shares of staged operations; REQUIRES: not null when `plan` has
  // staged operations of any kind, and it outlives the transfer.
  Transfer(TransferId id, std::shared_ptr<RemotePeer> peer, TransferOp op, TransferPlan plan,
           std::vector<std::uint8_t> notificationHeader, std::optional<std::string> notification,
           std::uint32_t maxOpsInFlight, TransferListener& listener,
           StagingAccess* staging = nullptr);

  TransferId id() const { return id_; }
  TransferOp op() const { return op_; }
  const std::string& peerName() const { return peer_->name(); }
  const std::shared_ptr<RemotePeer>& peer() const { return peer_; }
  const TransferPlan& plan() const { return plan_; }
  // How many times one start posts its operations again after resets of the link.
  static constexpr std::uint32_t kMaxRelinks = 3;

  TransferStatus status() const;
  TransferStats stats() const;
  bool pending() const { return state_.load() == TransferState::kPending; }

  // Called once when a started transfer finishes, on the thread that finishes it, with no
  // kvx lock held.
  using FinishedCallback = std::function<void(TransferId, const TransferStatus&)>;

  // Posts the transfer. FAILED_PRECONDITION if it is pending; errors found before anything
  // was posted (deregistered region, failed peer) are returned and leave it as it was (the
  // callback is then not called). While a reset opens the peer's next link, it returns at
  // once and posts once the link is up (a peer failure meanwhile fails it then).
  Status start(MemoryRegistry& registry, FinishedCallback onFinished = nullptr);
  void advance();
  // Asks the transfer to stop posting and end as failed with `reason` once drained.
  void requestCancel(Status reason);

 private:
  // One completion sink per kind of operation; each forwards to the transfer.
  struct Sink final : Completion {
    Transfer* transfer = nullptr;
    enum class Kind { kOp, kFlush, kMessage } kind = Kind::kOp;
    void onComplete(Status status) override;
  };

  void onComplete(Sink::Kind kind, Status status);
  void recordError(Status status) KVX_EXCLUDES(errorMutex_);
  // An operation's error as the transfer reports it (the peer's failure when it has one).
  Status explain(Status status) const;
  bool staged() const {
    return !plan_.stagedOps.empty() || !plan_.remoteStagedOps.empty() ||
           !plan_.bothStagedOps.empty();
  }
  Status createStagedRunLocked() KVX_REQUIRES(mutex_);
  void beginStagedLocked() KVX_REQUIRES(mutex_);
  void onStagedDone(Status status);
  void deliverStagedCompletions() KVX_EXCLUDES(mutex_);
  Status refreshKeys() KVX_REQUIRES(mutex_);
  // Takes `link` as the link to post on, with the remote keys unpacked on it.
  Status useLink(std::shared_ptr<PeerLink> link) KVX_REQUIRES(mutex_);
  // "transfer <id> to '<peer>'", the context of the transfer's errors.
  std::string describe() const;
  // True when the link this start posts on was reset by this agent.
  bool linkWasReset() const;
  // Once a reset's failures drained: posts everything again on the next link, or records
  // why not; for a start that found the link being reopened, takes the next link. False
  // while the next link is being opened (the transfer is handed back to the listener once
  // it is).
  bool relinkLocked() KVX_REQUIRES(mutex_);
  // Hands this transfer to the listener (for linkWhenReady).
  std::function<void()> wakeWhenLinkReady();
  // Posts operations until the window is full, the plan is posted or this turn's budget is
  // spent; true in the last case (the caller must queue the transfer for another turn).
  bool postOpsLocked() KVX_REQUIRES(mutex_);
  // Returns the self-reference the caller must drop after unlocking.
  std::shared_ptr<Transfer> finishLocked() KVX_REQUIRES(mutex_);

  const TransferId id_;
  const std::shared_ptr<RemotePeer> peer_;
  const TransferOp op_;
  const TransferPlan plan_;
  const std::vector<std::uint8_t> notificationHeader_;
  const std::optional<std::string> notification_;
  const std::uint32_t maxOpsInFlight_;
  TransferListener& listener_;
  StagingAccess* const staging_;

  Sink opSink_, flushSink_, messageSink_;

  mutable sync::Mutex mutex_;  // guards everything below that is not atomic
  enum class Phase { kOps, kFlush, kMessage, kEnd };
  Phase phase_ KVX_GUARDED_BY(mutex_) = Phase::kEnd;
  std::size_t nextOp_ KVX_GUARDED_BY(mutex_) = 0;
  std::shared_ptr<PeerLink> link_ KVX_GUARDED_BY(mutex_);
  // link_, for completions, which must not take mutex_; set only while nothing is in flight.
  std::atomic<const PeerLink*> postingLink_{nullptr};
  std::uint32_t relinks_ KVX_GUARDED_BY(mutex_) = 0;  // of the current start
  std::uint64_t keysEpoch_ KVX_GUARDED_BY(mutex_) = 0;
  // Per remote slot, valid for keysEpoch_.
  std::vector<const RemoteKey*> keys_ KVX_GUARDED_BY(mutex_);
  // Keeps the transfer alive while pending.
  std::shared_ptr<Transfer> self_ KVX_GUARDED_BY(mutex_);
  FinishedCallback onFinished_ KVX_GUARDED_BY(mutex_);  // of the current start
  MemoryRegistry* registry_ KVX_GUARDED_BY(mutex_) = nullptr;
  // Of the current start, if it has staged operations.
  std::vector<std::shared_ptr<StagedShare>> stagedShares_ KVX_GUARDED_BY(mutex_);
  bool stagedBegun_ KVX_GUARDED_BY(mutex_) = false;
  bool stagedCancelled_ KVX_GUARDED_BY(mutex_) = false;

  std::atomic<TransferState> state_{TransferState::kIdle};
  std::atomic<std::uint32_t> inFlight_{0};
  std::atomic<bool> flushDone_{false};
  std::atomic<bool> messageDone_{false};
  std::atomic<std::size_t> stagedLeft_{0};  // shares that have not reported
  std::atomic<bool> errored_{false};
  // No usable link: an operation failed because our reset closed it, or the start found the
  // next link still opening; nothing is posted until relinkLocked() attaches the next one.
  std::atomic<bool> relink_{false};
  mutable sync::Mutex errorMutex_;  // leaf lock
  Status error_ KVX_GUARDED_BY(errorMutex_);
};

}  // namespace kvx::engine
