#pragma once

// Engine: the data plane of one agent. It is the root that builds the parts below in order,
// wires them to each other and to the transport, forwards its members to them, and tears
// them down in the order that keeps every guarantee (see ~Engine):
//   MemoryRegistry      the registered memory
//   PeerDirectory       the known peers, their events, link reopening (peer/)
//   StagingHost         staging of GPU memory through host buffers, both sides (staged/)
//   NotificationRouter  data-path messages: notifications sent and received (notify/)
//   TransferService     prepared lists, transfers, waits and cancels (transfer/)
//   ProgressDriver      the progress thread, unless the caller drives progress (progress/)
// Each part has its own locks and says which threads call it; the engine itself holds no
// lock. It knows nothing of the control channel: metadata reaches it as PeerMetadata values.
//
// Thread safety: every member may be called from any thread.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/gpu/gpu_runtime.h"
#include "engine/memory/memory_registry.h"
#include "engine/memory/region_copy.h"
#include "engine/notify/notification_inbox.h"
#include "engine/notify/notification_router.h"
#include "engine/peer/link_reopener.h"
#include "engine/peer/peer_directory.h"
#include "engine/peer/peer_metadata.h"
#include "engine/peer/remote_peer.h"
#include "engine/progress/progress_driver.h"
#include "engine/progress/progress_hooks.h"
#include "engine/staged/staging_host.h"
#include "engine/staged/staging_service.h"
#include "engine/staged/window_server.h"
#include "engine/transfer/data_path.h"
#include "engine/transfer/transfer.h"
#include "engine/transfer/transfer_service.h"
#include "engine/transport/transport.h"
#include "kvx/agent_options.h"
#include "kvx/peer_event.h"
#include "kvx/transfer.h"

namespace kvx::engine {

struct EngineOptions {
  std::string name;
  std::string transport = "ucx";
  TransportOptions transportOptions;
  ProgressMode progressMode = ProgressMode::kThread;
  std::chrono::microseconds progressSpin{50};
  std::chrono::milliseconds cancelGrace{200};
  std::uint32_t maxOpsInFlight = 256;
  std::uint64_t maxOpBytes = 8u << 20;
  // Where GPU memory is probed, copied and staged; null: this process's runtime
  // (gpu::gpuRuntime()). Tests pass a gpu::FakeGpuRuntime, whose device memory is host memory.
  std::shared_ptr<gpu::GpuRuntime> gpuRuntime;
  // How this agent's CUDA regions move (AgentOptions::gpuPath): kAuto registers them with a
  // transport that moves CUDA memory and stages them otherwise; kDirect refuses to register
  // or allocate what the transport cannot move (FAILED_PRECONDITION with its reason);
  // kStaged never registers them with the transport, and gpuReach() then says direct is off.
  GpuPath gpuPath = GpuPath::kAuto;
  // Staging buffers for GPU memory the transport cannot move, on this side and, through
  // this agent's staging window, for peers.
  StagingOptions staging;
  // Asked, before a reset of this engine's own opens a peer's next data-path link, to wait
  // until the peer is heard from (link_reopener.h). Null: links reopen at once. The agent
  // passes one that watches the peer's control link.
  ReopenGate reopenGate;
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> create(EngineOptions options);
  // Cancels pending transfers, stops progress, releases peers and memory.
  ~Engine();

  const std::string& name() const { return options_.name; }
  std::uint64_t incarnation() const { return incarnation_; }
  Transport& transport() { return *transport_; }
  // Whether this agent moves CUDA memory directly (the transport can, and gpuPath is not
  // kStaged), and why not; describeGpuDirect() of it is logged at start-up.
  const GpuReach& gpuReach() const { return gpuReach_; }

  // ---- memory ----
  Result<RegionId> registerMemory(const MemoryRegionSpec& spec);
  Result<AllocatedRegion> allocateMemory(const AllocationSpec& spec);
  Status deregisterMemory(RegionId id);
  Result<RegionInfo> regionInfo(RegionId id) const;
  PeerMetadata localMetadata() const;
  // Copies `bytes` into region `id` at `offset`, or the region's bytes there out into `out`:
  // a memcpy for host memory, the copy engine of the region's device for CUDA memory (from
  // or to a buffer of its own, so that the caller's memory is never touched after return).
  // Synchronous; for filling and checking contents from the host, not a data path.
  // NOT_FOUND for an unknown region; INVALID_ARGUMENT for a range outside it; TIMED_OUT when
  // a copy is not done by `deadline` (it may still land; the region stays pinned until it
  // has); the copy engine's error otherwise.
  Status copyIntoRegion(RegionId id, std::uint64_t offset, std::span<const std::byte> bytes,
                        Deadline deadline);
  Status copyFromRegion(RegionId id, std::uint64_t offset, std::span<std::byte> out,
                        Deadline deadline);
  // Many such copies at once, all into regions (`into`) or all out of them: every piece is
  // submitted before the call waits (region_copy.h).
  Status copyRegionPieces(std::span<const RegionPiece> pieces, bool into, Deadline deadline);

  // ---- peers ----
  // Adds a peer, or updates its regions if the same incarnation is known already. A known
  // name with another incarnation is a restart: the old peer's transfers fail first.
  Status addOrUpdatePeer(PeerMetadata metadata);
  // Updates the regions of a known peer from metadata it sent later. NOT_FOUND for an
  // unknown peer; FAILED_PRECONDITION for metadata of another incarnation than the one
  // known (stale: a restart always comes with a new handshake, never as an update).
  Status updatePeer(PeerMetadata metadata);
  Status removePeer(const std::string& name, Status why);
  Result<std::shared_ptr<RemotePeer>> peer(const std::string& name) const;
  std::vector<std::string> peerNames() const;
  // The live data path to `peer`: the transport's endpoint description ("ucx: tcp/lo ..."),
  // then how GPU memory moves between the two (describeGpuMemory: this agent's CUDA regions,
  // the peer's exposed ones, with or without a transport key, and its staging window).
  // Logged at info level when the peer joins. NOT_FOUND for an unknown peer.
  Result<std::string> dataPathDescription(const std::string& peer) const;
  // kvx::Agent::peerWritesDirectly: Endpoint::peerWritesDirectly of the peer's live link.
  Result<bool> peerWritesDirectly(const std::string& peer) const;
  // From now on hands every peer join and departure (a restart is a departure of the old
  // incarnation, then a join of the new one) to `handler`, on the thread that changed the
  // peer set (normally the control channel's), outside every engine lock. Events about one
  // peer arrive in order when one thread makes its changes; a user that may see them from
  // several threads compares incarnations. Null stops them.
  void setPeerEventHandler(PeerEventHandler handler);
  // When a peer's data path fails under a live peer (the transport reports its endpoint
  // failed: for UCX, its keepalive timed out or its connection broke), the engine removes the
  // peer (its transfers fail with PEER_FAILED, a departure event follows) and then hands the
  // peer's name and that Status to `handler`, outside every engine lock, so that the owner can
  // drop the peer's control link too and a reconnect starts from a fresh handshake.
  using DataPathFailureHandler = PeerDirectory::DataPathFailureHandler;
  void setDataPathFailureHandler(DataPathFailureHandler handler);

  // ---- transfers ----
  Result<TransferId> createTransfer(const TransferRequest& request);
  Result<ListId> prepareLocalList(std::span<const MemoryRange> ranges);
  Result<ListId> prepareRemoteList(const std::string& peer, std::span<const MemoryRange> ranges);
  Result<TransferId> makeTransfer(TransferOp op, ListId localList,
                                  std::span<const std::uint32_t> localIndices, ListId remoteList,
                                  std::span<const std::uint32_t> remoteIndices,
                                  std::optional<std::string> notification);
  Status releaseList(ListId list);
  // `onFinished` (optional) runs once when this post finishes; see Transfer::start.
  Status post(TransferId id, Transfer::FinishedCallback onFinished = nullptr);
  TransferStatus poll(TransferId id) const;
  Status wait(TransferId id, Deadline deadline);
  // Cancels a pending transfer: cancel({&id, 1}).
  Status cancel(TransferId id);
  // Cancels every pending transfer of `ids` together: each stops posting at once; those
  // that have not drained within one cancelGrace (counted once for the whole set) have
  // their peer's link reset, once per peer. When it returns, no further byte of any of them
  // lands. Transfers that are not pending are left alone. INTERNAL if some still had
  // operations in flight after their link was reset; else NOT_FOUND for the first unknown id
  // (the others are cancelled all the same).
  Status cancel(std::span<const TransferId> ids);
  Result<TransferStats> stats(TransferId id) const;
  Status release(TransferId id);

  // The staging window through which peers reach this agent's GPU memory that its transport
  // cannot register; null until such a region was registered (or if making it failed).
  WindowServer* windowServer() { return staging_->windowServer(); }

  // ---- notifications ----
  Status sendNotification(const std::string& peer, std::string payload);
  NotificationInbox& inbox() { return notifications_->inbox(); }
  // Hands every later notification to `handler` (on the progress thread, or the thread
  // calling progress() in caller-driven mode, outside kvx locks) instead of queueing it for
  // waitNotification. Null restores queueing.
  void setNotificationHandler(std::function<void(Notification)> handler);
  Result<Notification> waitNotification(Deadline deadline);
  // Wakes every waitNotification with CANCELLED, now and later (Agent::cancelWaits).
  void cancelNotificationWaits();

  // One round of progress (caller-driven mode, or from the progress thread).
  bool progress();

 private:
  explicit Engine(EngineOptions options);
  bool callerDriven() const { return options_.progressMode == ProgressMode::kCaller; }
  // What the parts that queue work for progress, or wait for it, are given.
  ProgressHooks progressHooks();
  // Wakes the progress thread, if there is one.
  void kick() {
    if (driver_) driver_->kick();
  }

  EngineOptions options_;
  std::uint64_t incarnation_;
  std::shared_ptr<gpu::GpuRuntime> gpu_;
  std::unique_ptr<Transport> transport_;
  GpuReach gpuReach_;
  // The parts, built in this order and released in reverse by ~Engine.
  std::unique_ptr<MemoryRegistry> registry_;
  std::unique_ptr<PeerDirectory> peers_;
  std::unique_ptr<StagingHost> staging_;
  std::unique_ptr<NotificationRouter> notifications_;
  std::unique_ptr<TransferService> transfers_;
  std::unique_ptr<ProgressDriver> driver_;  // null in caller-driven mode
};

}  // namespace kvx::engine
