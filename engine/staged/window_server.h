#pragma once

// WindowServer: the target side of target-side staging (staging_message.h has the protocol).
// It answers peers' requests against this agent's StagingWindow: it checks each range of a
// request against the region it names (exposed, GPU memory the transport cannot reach, the
// range inside the region), their sum against one slot, and the slot table (a peer may name
// only a slot lent to it for that request); it copies between a slot and device memory with
// the copy engine of each range's region (a copy per range, the reply once all completed),
// and replies. A request that fails a check is answered kFailed with a
// message naming what was wrong; nothing outside the named region is ever copied, and the
// server goes on serving others. Requests for a slot wait while every slot is lent, and
// slots go to the waiting peers in turn (PeerFairQueue), each peer's in arrival order.
//
// Threads: onRequest() is called from the transport's message handler and only queues;
// peerGone() from any thread, also only queues; pump() does the work, on a thread that holds
// no transport lock (the engine's progress), one caller at a time (others return at once).
// Copy completions arrive on the copy engine's thread, are queued, and call `wake`.
// Lifetime: owned by the engine. REQUIRES: close() returns before the copy engines, the
// registry or the window go.

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/memory/memory_registry.h"
#include "engine/staged/peer_fair_queue.h"
#include "engine/staged/staging_message.h"
#include "engine/staged/staging_service.h"
#include "engine/staged/staging_window.h"
#include "sync/mutex.h"

namespace kvx::engine {

class WindowServer {
 public:
  // Sends `payload` as a staging reply to `peer` (dropped when the peer is unknown).
  using ReplySender = std::function<void(const std::string& peer, std::vector<std::uint8_t>)>;

  WindowServer(std::unique_ptr<StagingWindow> window, MemoryRegistry& registry,
               StagingService& staging, ReplySender reply, std::function<void()> wake);
  ~WindowServer();

  WindowServer(const WindowServer&) = delete;
  WindowServer& operator=(const WindowServer&) = delete;

  StagingWindowMetadata metadata() const { return metadata_; }

  void onRequest(const std::string& peer, std::span<const std::uint8_t> payload);
  // The peer left: its waiting requests are dropped and its idle slots given back.
  void peerGone(const std::string& peer);
  // Handles what was queued; true if there was anything.
  bool pump();
  // Stops serving: later requests and copy completions are ignored. The copy engines must
  // then be closed (they wait for running copies) before the server is destroyed.
  void close();

  // For tests: slots lent now, slots lent so far (one per write or read request served),
  // and requests refused so far.
  std::size_t slotsLent();
  std::uint64_t lends() const;
  std::uint64_t refused() const;

 private:
  struct Inbound {
    std::string peer;
    std::vector<std::uint8_t> payload;  // empty: the peer left
  };
  struct CopyDone {
    std::uint32_t slot;
    Status status;
  };
  struct Waiting {
    StagingRequest request;
    std::vector<StagingWindow::LeaseRange> ranges;  // the request's, checked
  };

  // These run on the pumping thread, under pumpMutex_.
  void handle(const std::string& peer, const StagingRequest& request) KVX_REQUIRES(pumpMutex_);
  void handleCopyDone(const CopyDone& done) KVX_REQUIRES(pumpMutex_);
  // The ranges of a kWrite/kRead request with their regions, checked, or why it is refused.
  Result<std::vector<StagingWindow::LeaseRange>> checkRanges(const StagingRequest& request)
      KVX_REQUIRES(pumpMutex_);
  void startCopy(std::uint32_t slot) KVX_REQUIRES(pumpMutex_);
  void serveWaiting() KVX_REQUIRES(pumpMutex_);
  void refuse(const std::string& peer, const StagingRequest& request, Status why);
  void send(const std::string& peer, const StagingReply& reply);

  const StagingWindowMetadata metadata_;
  MemoryRegistry& registry_;
  StagingService& staging_;
  const ReplySender reply_;
  const std::function<void()> wake_;

  sync::Mutex pumpMutex_;  // held by the one thread in pump()
  std::unique_ptr<StagingWindow> window_ KVX_GUARDED_BY(pumpMutex_);
  PeerFairQueue<Waiting> waiting_ KVX_GUARDED_BY(pumpMutex_);

  sync::Mutex queueMutex_;  // leaf lock
  std::deque<Inbound> inbound_ KVX_GUARDED_BY(queueMutex_);
  std::deque<CopyDone> copiesDone_ KVX_GUARDED_BY(queueMutex_);
  bool closed_ KVX_GUARDED_BY(queueMutex_) = false;

  std::atomic<std::uint64_t> lends_{0};
  std::atomic<std::uint64_t> refused_{0};
};

}  // namespace kvx::engine
