#pragma once

// kvx::Agent: the public facade of the engine. One agent per process (or per GPU) owns a
// data-path transport, a control channel, and the memory regions registered with it.
//
// Thread safety: every member function may be called from any thread, concurrently.
// Progress: by default the agent's own progress thread drives the data path (see
// AgentOptions::progressMode); in caller mode the caller must call progress().
// Errors: every call returns Status or Result<T>; nothing throws.

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kvx/agent_options.h"
#include "kvx/ids.h"
#include "kvx/memory.h"
#include "kvx/peer_event.h"
#include "kvx/result.h"
#include "kvx/status.h"
#include "kvx/transfer.h"

// Declarations here are libkvx.so's exports (api/shared_library/).
#pragma GCC visibility push(default)
namespace kvx {

// What an agent knows about a connected peer.
struct PeerInfo {
  std::string name;
  std::vector<RegionInfo> regions;  // exposed regions only
  std::uint64_t incarnation = 0;    // drawn at the peer's start; a restart changes it
  std::string applicationInfo;      // the peer's AgentOptions::applicationInfo
};

class Agent final {
 public:
  static Result<std::unique_ptr<Agent>> create(AgentOptions options);

  // Fails every pending transfer with CANCELLED, closes endpoints and the channel, and joins
  // the agent's threads. Registered memory owned by the caller is not touched.
  ~Agent();

  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  const std::string& name() const;
  // The bound control address ("127.0.0.1:41234"); empty when not listening.
  std::string listenAddress() const;
  // The live data path to `peer` (for logs, status and benchmark headers): the transports
  // UCX selected, then how GPU memory moves with it, e.g. "...; GPU memory: staged through
  // host (UCX 1.13.1 was built without CUDA support); peer's GPU memory: through its staging
  // window", or "...; no GPU memory on either side". NOT_FOUND for an unknown peer.
  Result<std::string> dataPathDescription(const std::string& peer) const;
  // Whether `peer`'s process writes into this agent's memory by itself on the live data
  // path (UCX over shared memory or cross-memory attach, CUDA IPC): closing the link then
  // does not stop a copy the peer is in the middle of; only the peer's own cancel, or the
  // end of its process, does. False where this agent's side places every byte (UCX over tcp
  // or RDMA, the socket transport). Assumes the peer's UCX offers what this agent's offers
  // (transports are chosen from both sides' lists). NOT_FOUND for an unknown peer.
  Result<bool> peerWritesDirectly(const std::string& peer) const;

  // ---- memory ----
  Result<RegionId> registerMemory(const MemoryRegionSpec& spec);
  Result<AllocatedRegion> allocateMemory(const AllocationSpec& spec);
  // Fails with FAILED_PRECONDITION while a pending transfer uses the region.
  Status deregisterMemory(RegionId region);
  Result<RegionInfo> regionInfo(RegionId region) const;
  // Copies `bytes` into local region `region` at `offset`, or the region's bytes there out
  // into `out`: a memcpy for host memory, the copy engine of the region's device for CUDA
  // memory (from or to a buffer of its own, so that the caller's memory is never touched
  // after return). Synchronous; for filling and checking contents from the host (tests,
  // benchmarks, a KV pool's segments), not a data path. NOT_FOUND for an unknown region;
  // INVALID_ARGUMENT for a range outside it; TIMED_OUT when a copy is not done by `deadline`
  // (it may still land; the region stays registered until it has).
  Status copyIntoRegion(RegionId region, std::uint64_t offset, std::span<const std::byte> bytes,
                        Deadline deadline);
  Status copyFromRegion(RegionId region, std::uint64_t offset, std::span<std::byte> out,
                        Deadline deadline);
  // Many such copies at once, all into regions (`into`) or all out of them: every piece is
  // submitted before the call waits (N small pieces of GPU memory cost about one copy-engine
  // round trip).
  Status copyRegionPieces(std::span<const RegionCopy> pieces, bool into, Deadline deadline);

  // ---- peers ----
  // Connects over the control channel to `address` ("host:port"), exchanges metadata both
  // ways and returns the peer's name. Without a deadline, AgentOptions::connectTimeout
  // bounds it; TIMED_OUT when the deadline passes first.
  Result<std::string> connect(const std::string& address);
  Result<std::string> connect(const std::string& address, Deadline deadline);
  // This agent's metadata (name, data-path address, exposed regions with packed keys).
  Result<std::vector<std::uint8_t>> exportMetadata() const;
  // Loads a peer's exported metadata without a control channel; returns the peer's name.
  Result<std::string> loadPeerMetadata(std::span<const std::uint8_t> blob);
  Result<PeerInfo> peerInfo(const std::string& peer) const;
  std::vector<std::string> peers() const;
  // Fails the peer's pending transfers with CANCELLED and forgets it.
  Status disconnect(const std::string& peer);

  // ---- transfers ----
  // Validates and plans a transfer (coalescing adjacent segments); does not post it.
  Result<TransferId> createTransfer(const TransferRequest& request);

  // Prepared descriptor lists: validated and resolved once, then used by index. Preparing a
  // remote list also readies the peer's memory on the data path (its keys unpacked; on
  // shared memory, its pages mapped into this process), so that the first transfer from it
  // runs at full speed; that costs about 0.25 s per GiB of shared memory on this machine.
  Result<ListId> prepareLocalList(std::span<const MemoryRange> ranges);
  Result<ListId> prepareRemoteList(const std::string& peer, std::span<const MemoryRange> ranges);
  // Builds a transfer from entries of two prepared lists (entry i of localIndices pairs with
  // entry i of remoteIndices); only index bounds and lengths are checked.
  Result<TransferId> makeTransfer(TransferOp op, ListId localList,
                                  std::span<const std::uint32_t> localIndices, ListId remoteList,
                                  std::span<const std::uint32_t> remoteIndices,
                                  std::optional<std::string> notification = std::nullopt);
  Status releaseList(ListId list);

  // Posts (or reposts, once finished) a created transfer.
  Status post(TransferId transfer);
  // As post(), and calls `onFinished` exactly once when this post finishes (done or failed,
  // including by cancel, peer failure or the agent's destruction). It runs on the thread
  // that finishes the transfer (normally the progress thread; possibly a thread calling
  // post, cancel, disconnect or the destructor), outside every kvx lock: it may call Agent
  // members, but should return quickly, since it delays progress. Not called when post
  // itself returns an error.
  Status post(TransferId transfer, TransferCallback onFinished);
  TransferStatus poll(TransferId transfer) const;
  // Waits until the transfer finished or the deadline passed (TIMED_OUT; the transfer goes on).
  Status wait(TransferId transfer, Deadline deadline);
  // Cancels a pending transfer. When it returns, no further byte of that transfer lands.
  Status cancel(TransferId transfer);
  // Cancels a set of transfers together, as cancel() each, but the wait for their
  // operations to drain (AgentOptions::cancelGrace) is paid once for the set, and a peer
  // whose link must be reset to abort them is reset once. Transfers that are not pending are
  // left alone; an unknown id is reported (NOT_FOUND) after the others are cancelled.
  Status cancel(std::span<const TransferId> transfers);
  Result<TransferStats> transferStats(TransferId transfer) const;
  // Forgets a finished transfer; a pending one is cancelled first.
  Status release(TransferId transfer);

  // createTransfer + post.
  Result<TransferId> submit(const TransferRequest& request);

  // ---- notifications ----
  // Sends `payload` to `peer`, after whatever this agent posted to it before. It returns once
  // the payload is handed to the data path, not once it arrived: one still queued when this
  // agent is destroyed or the peer disconnects may be dropped. Have the peer answer where arrival
  // matters (a transfer's own notification arrives after its data, with the transfer).
  Status sendNotification(const std::string& peer, std::string payload);
  // Received notifications, oldest first; at most `max`.
  std::vector<Notification> takeNotifications(std::size_t max = SIZE_MAX);
  // Waits for one notification until the deadline (TIMED_OUT if none arrived; CANCELLED once
  // cancelWaits() was called and none is queued).
  Result<Notification> waitNotification(Deadline deadline);
  // Wakes every waitNotification in progress with CANCELLED, and makes later ones return at
  // once: for an owner about to destroy the agent while other threads wait on it (Python's
  // close()). Queued notifications can still be taken. Idempotent; any thread.
  void cancelWaits();
  // From now on hands every notification to `handler` instead of queueing it for
  // takeNotifications/waitNotification (already queued ones are handed over too). It runs
  // on the progress thread (in caller mode: the thread calling progress or wait), outside
  // every kvx lock, one notification at a time, in arrival order. Null restores queueing.
  void setNotificationHandler(NotificationHandler handler);

  // From now on hands every peer join and departure to `handler`: kJoined when a peer's
  // metadata is accepted (connect, an inbound hello, a loaded blob), kLeft when it
  // disconnects, its control link breaks or times out (peerTimeout), or it restarts (the old
  // incarnation leaves before the new one joins). Departures come with the Status its
  // transfers failed with. It runs on the thread that saw the change (normally the control
  // channel's; a caller's for connect, disconnect and loadPeerMetadata), outside every kvx
  // lock, and must not block; it may call Agent members except connect and disconnect.
  // Events about one peer arrive in order unless the caller races its own connect or
  // disconnect calls with the channel: compare incarnations. Null stops them.
  void setPeerEventHandler(PeerEventHandler handler);

  // ---- progress (caller mode) ----
  // Makes non-blocking progress; returns true when something happened.
  bool progress();

 private:
  struct __attribute__((visibility("hidden"))) Impl;  // kvx's own: not exported
  friend Impl& agentImpl(Agent& agent);               // for kvx's own layers (agent/agent_impl.h)
  explicit Agent(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvx
#pragma GCC visibility pop
