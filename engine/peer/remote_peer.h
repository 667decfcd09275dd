#pragma once

// RemotePeer: everything this agent knows about one peer agent: its metadata, its exposed
// regions and the current data-path link to it.
//
// Thread safety: all members may be called from any thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/peer/peer_link.h"
#include "engine/peer/peer_metadata.h"
#include "engine/peer/remote_region.h"
#include "engine/transport/transport.h"
#include "kvx/result.h"
#include "kvx/transfer.h"
#include "sync/mutex.h"

namespace kvx::engine {

class RemotePeer {
 public:
  // Called when the transport reports the current link's endpoint failed (for UCX: the
  // peer's keepalive timed out, or its connection broke), on the thread that found out,
  // outside every RemotePeer lock. Not called for a link that was already replaced or
  // closed, nor after fail().
  using LinkFailureHandler = std::function<void(const Status& why)>;

  // How long awaitLink() waits for a reset to open the next link, once it may open it.
  static constexpr std::chrono::seconds kReopenWait{5};

  // Connects a data-path endpoint to the peer described by `metadata`, after the transport
  // checked the peer's address and keys (Transport::checkPeerKeys). awaitLink() waits
  // `reopenWait` for a reset: kReopenWait plus however long the reset may wait before it
  // opens the link (the engine's ReopenGate::longest).
  static Result<std::shared_ptr<RemotePeer>> connect(Transport& transport, PeerMetadata metadata,
                                                     LinkFailureHandler onLinkFailure = nullptr,
                                                     Clock::duration reopenWait = kReopenWait);
  ~RemotePeer();

  const std::string& name() const { return name_; }
  std::uint64_t incarnation() const { return incarnation_; }
  // PeerMetadata::applicationInfo as the peer's handshake gave it.
  const std::string& applicationInfo() const { return applicationInfo_; }

  // Checks that [offset, offset + length) lies in an exposed region of the peer.
  Result<std::shared_ptr<RemoteRegion>> resolve(const MemoryRange& range, std::size_t index,
                                                std::string_view side) const;
  std::vector<RegionInfo> regions() const;

  // Has the transport check the keys of `regions` and `window` (Transport::checkPeerKeys)
  // before any is used: INVALID_ARGUMENT for one its library cannot take.
  Status checkKeys(const std::vector<RegionMetadata>& regions,
                   const StagingWindowMetadata& window) const;

  // Replaces the region table: regions no longer listed are marked removed.
  void updateRegions(const std::vector<RegionMetadata>& regions);

  // The peer's staging window, as a remote region (its whole span, with its key), and the
  // size of one slot; null before the peer published one. A window once published stays
  // (an agent keeps its window for its lifetime).
  struct Window {
    std::shared_ptr<RemoteRegion> region;
    std::uint64_t slotBytes = 0;
    std::uint32_t slots = 0;
  };
  std::shared_ptr<const Window> stagingWindow() const;
  void updateStagingWindow(const StagingWindowMetadata& window);

  // Sends a fire-and-forget message (a notification) on the current link; its bytes are
  // kept until the transport is done with them, and a send that fails later is logged with
  // `what`. While a reset opens the next link, the message waits for that link instead of
  // the caller: it goes out there, in order, after the notifications the reset cancelled.
  // The peer's failure once it failed; RESOURCE_EXHAUSTED when kMaxDeferred wait already.
  Status sendOwned(std::vector<std::uint8_t> header, std::vector<std::uint8_t> payload,
                   std::string what);
  static constexpr std::size_t kMaxDeferred = 65536;

  // The current link; fails with PEER_FAILED once the peer was declared failed, and with
  // TRANSPORT_ERROR while a reset is opening the next one (for the progress thread, which
  // must not wait: what it would send then was meant for the closed link).
  Result<std::shared_ptr<PeerLink>> link() const;
  // The current link, waiting up to reopenWait for a reset in progress to open it
  // (TIMED_OUT after that): for what cannot wait asynchronously (a staged transfer's start,
  // unpacking keys). Transfers and notifications wait with linkWhenReady and sendOwned.
  Result<std::shared_ptr<PeerLink>> awaitLink() const;
  Clock::duration reopenWait() const { return reopenWait_; }
  // The current link without waiting, for the progress thread: while a reset opens the
  // next link, null, and `onReady` runs once that reset ended (whatever its outcome), on
  // the resetting thread with no RemotePeer lock held; otherwise as link(), and `onReady` is
  // dropped.
  Result<std::shared_ptr<PeerLink>> linkWhenReady(std::function<void()> onReady);
  // Unpacks the keys of `regions` on the current link now rather than at their first
  // transfer; on shared memory that maps the peer's memory into this process and populates
  // the mapping (about 0.25 s per GiB here). Regions already unpacked cost nothing.
  Status unpackKeys(const std::vector<std::shared_ptr<RemoteRegion>>& regions);
  // A reset of this agent's own (a cancel whose operations did not drain), in two steps.
  // beginReset force-closes the current link: its in-flight operations fail now, and the
  // close waits for the transport at most until `bound`, so what the reset fails is
  // reported within it. finishReset then opens the next link, which is not bounded (UCX
  // connects before returning: a second under heavy loss, minutes toward a cut peer): run
  // it off the caller's path, once the peer is heard from (LinkReopener). Between the two,
  // awaitLink() holds new transfers and notifications and linkWhenReady() defers its
  // callers until the link is up; link() says it is being reopened. Notifications the close
  // cancelled are sent again on the new link, once, each sender's completion reporting that
  // resend; they may follow messages other threads sent on the new link meanwhile. The keys
  // the old link had unpacked are unpacked again on the new one while `bound` lasts, the
  // rest at their next transfer.
  // beginReset returns true when the caller must call finishReset (exactly once); false
  // when there was nothing to close: the peer failed, or another reset is already opening
  // the next link (which is what this one would have done).
  bool beginReset(const std::string& reason, Deadline bound);
  // Opens the next link (not when the peer failed meanwhile), resends, calls the deferred.
  Status finishReset();
  // When the reset between beginReset and finishReset began; the clock's epoch when none is.
  Clock::time_point resetStarted() const;
  // Both steps on the caller's thread.
  Status resetLink(const std::string& reason, Deadline bound);
  // Declares the peer failed: the link is closed, the transport drops what the peer still
  // sends (Transport::dropPeer), and later calls fail with `why`.
  void fail(Status why);
  // True for the first caller only: the one that removes the peer from its engine.
  bool claimRemoval() { return !removalClaimed_.exchange(true); }
  bool removalClaimed() const { return removalClaimed_.load(); }
  Status failure() const;

  std::string dataPathDescription() const;
  // Endpoint::peerWritesDirectly of the live link; true (the cautious answer) without one.
  bool peerWritesDirectly() const;

 private:
  RemotePeer(Transport& transport, PeerMetadata metadata, LinkFailureHandler onLinkFailure,
             Clock::duration reopenWait);
  Result<std::shared_ptr<PeerLink>> openLink();
  void onLinkFailed(std::uint64_t epoch, const Status& why);
  // Sends `messages` (cancelled by a reset) on `next`, or fails them when there is none.
  void resend(std::vector<CancelledMessage> messages, const std::shared_ptr<PeerLink>& next);
  // Sends what sendOwned() deferred during a reset on `next` (or logs it as not sent), until
  // none is left; then ends draining_.
  void drainDeferred(const std::shared_ptr<PeerLink>& next);

  Transport& transport_;
  const std::string name_;
  const std::uint64_t incarnation_;
  const std::string applicationInfo_;
  const std::vector<std::uint8_t> dataAddress_;
  const LinkFailureHandler onLinkFailure_;
  const Clock::duration reopenWait_;
  std::weak_ptr<RemotePeer> self_;  // for the endpoints' error handlers

  mutable sync::Mutex mutex_;
  std::unordered_map<RegionId, std::shared_ptr<RemoteRegion>> regions_ KVX_GUARDED_BY(mutex_);
  // Null while a reset opens the next link (reopening_).
  std::shared_ptr<PeerLink> link_ KVX_GUARDED_BY(mutex_);
  bool reopening_ KVX_GUARDED_BY(mutex_) = false;
  mutable std::condition_variable linkReady_;  // reopening_ ended
  // linkWhenReady() callers waiting for it.
  std::vector<std::function<void()>> onLinkReady_ KVX_GUARDED_BY(mutex_);
  // What beginReset hands to finishReset (written and read under mutex_ while reopening_).
  struct ResetInProgress {
    std::string reason;
    Deadline bound;
    Clock::time_point started, closedAt;
    std::vector<CancelledMessage> cancelled;
    std::vector<std::shared_ptr<RemoteRegion>> keyed;  // had keys on the old link
  };
  ResetInProgress reset_ KVX_GUARDED_BY(mutex_);
  struct Deferred {
    std::vector<std::uint8_t> header, payload;
    std::string what;
  };
  // sendOwned() during a reset, in order.
  std::vector<Deferred> deferred_ KVX_GUARDED_BY(mutex_);
  // finishReset is sending deferred_: later sends queue too.
  bool draining_ KVX_GUARDED_BY(mutex_) = false;
  std::shared_ptr<const Window> window_ KVX_GUARDED_BY(mutex_);
  std::uint64_t nextEpoch_ KVX_GUARDED_BY(mutex_) = 1;
  Status failure_ KVX_GUARDED_BY(mutex_);
  std::atomic<bool> removalClaimed_{false};
};

}  // namespace kvx::engine
