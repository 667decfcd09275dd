#pragma once

// StagingHost: one engine's staging of GPU memory through host buffers, on both sides of a
// transfer. It owns the StagingService (copy engines and this side's staging buffers), the
// StagingClient (this side's requests to peers' staging windows) and, once an exposed GPU
// region its transport cannot register needs one, the WindowServer through which peers
// reach this agent's GPU memory. Transfers reach it only as their StagingAccess.
//
// Owner: the Engine. Threads: any thread may call any member. onMessage() runs in the
// transport's message handler and only queues; pump() runs on the progress thread (or the
// caller's, in caller-driven mode), outside every transport lock. Lock: windowMutex_, held
// only while the window is made (which registers its buffers with the transport); readers
// of the window use its atomic pointer.
// Lifetime: REQUIRES the transport, the GPU runtime, the registry and the peer directory
// outlive it, and it outlives every transfer made with it.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/gpu/copy_engine.h"
#include "engine/gpu/gpu_runtime.h"
#include "engine/memory/local_region.h"
#include "engine/memory/memory_registry.h"
#include "engine/notify/notification_header.h"
#include "engine/peer/peer_directory.h"
#include "engine/staged/remote_staged_run.h"
#include "engine/staged/staging_client.h"
#include "engine/staged/staging_service.h"
#include "engine/staged/window_server.h"
#include "engine/transfer/data_path.h"
#include "engine/transfer/staging_access.h"
#include "engine/transport/transport.h"
#include "sync/mutex.h"

namespace kvx::engine {

class StagingHost final : public StagingAccess {
 public:
  // `self`: this agent's name (in staging messages' headers and log lines). `wake` wakes
  // the progress thread (a no-op when the caller drives progress).
  StagingHost(std::string self, Transport& transport, gpu::GpuRuntime& gpu,
              MemoryRegistry& registry, PeerDirectory& peers, StagingOptions options,
              GpuReach reach, std::function<void()> wake);
  ~StagingHost();

  StagingHost(const StagingHost&) = delete;
  StagingHost& operator=(const StagingHost&) = delete;

  // StagingAccess.
  Status prepare(const TransferPlan& plan) override;
  Result<std::unique_ptr<StagedShare>> localShare(const TransferPlan& plan, TransferOp op,
                                                  std::shared_ptr<PeerLink> link,
                                                  std::vector<const RemoteKey*> keys,
                                                  std::function<void()> notify) override;
  Result<std::unique_ptr<StagedShare>> windowShare(const TransferPlan& plan, TransferOp op,
                                                   std::shared_ptr<RemotePeer> peer,
                                                   std::shared_ptr<PeerLink> link,
                                                   std::function<void()> notify) override;

  // Makes the staging window when `region` is exposed GPU memory the transport could not
  // register. A failure is logged, and peers are then refused as if there were no window.
  void ensureWindow(const LocalRegion& region) KVX_EXCLUDES(windowMutex_);
  // The window's server; null until the window was made.
  WindowServer* windowServer() const { return window_.load(); }

  // A staging request for this agent's window, or a reply to one of its own requests.
  void onMessage(const MessageHeader& header, std::span<const std::uint8_t> payload);
  // One round: the window's queued requests and finished copies, the deadlines of this
  // side's requests, and the slots it owes back. True if the window had work.
  bool pump();
  // `peer` left: its idle window slots and waiting requests go; copies running for it
  // finish unanswered.
  void peerGone(const std::string& peer);

  // The copy engine of `device`, created at first use (for copies into and out of regions).
  Result<gpu::CopyEngine*> copyEngine(int device) { return service_.copyEngine(device); }
  // How GPU memory moves between this agent and `peer` (describeGpuMemory).
  std::string describeGpuMemory(const RemotePeer& peer) const;

  // Stops the window serving and closes the copy engines, which wait for the copies they
  // run: no staged callback runs after it returns. Idempotent.
  void close();

 private:
  // Sends `payload` to `peer` on its current link; dropped when it is unknown or relinking.
  void send(const std::string& peer, const std::vector<std::uint8_t>& header,
            std::vector<std::uint8_t> payload, std::string what);
  // Gives back window slots granted to staged moves of this side that ended meanwhile.
  void releaseOrphanedSlots();

  const std::string self_;
  Transport& transport_;
  gpu::GpuRuntime& gpu_;
  MemoryRegistry& registry_;
  PeerDirectory& peers_;
  const StagingOptions options_;
  const GpuReach reach_;
  const std::function<void()> wake_;
  const std::vector<std::uint8_t> replyHeader_;

  StagingService service_;  // declared first: its buffers are deregistered last
  StagingClient client_;
  StagingContext context_;  // service_ and client_, for the window shares

  sync::Mutex windowMutex_;
  // Made once; destroyed after the copy engines closed.
  std::unique_ptr<WindowServer> windowOwner_ KVX_GUARDED_BY(windowMutex_);
  std::atomic<WindowServer*> window_{nullptr};  // windowOwner_, for lock-free readers
};

}  // namespace kvx::engine
