#pragma once

// Transport: the narrow data-path interface the engine is built on. One backend per folder
// below engine/transport/ (ucx/, socket/, inproc/); transport_registry.h is the only place
// that names them.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/transport/endpoint.h"
#include "engine/transport/transport_memory.h"
#include "kvx/agent_options.h"
#include "kvx/memory.h"
#include "kvx/result.h"

namespace kvx::engine {

namespace gpu {
class GpuRuntime;
}  // namespace gpu

struct TransportOptions {
  std::string agentName;   // for log lines
  std::string transports;  // backend-specific selection ("tcp", "shm", ...); empty = default
  std::string netDevices;  // backend-specific device selection; empty = default
  // How long a backend that connects in the background (socket) tries before it fails the
  // endpoint; also how long it gives an inbound connection to introduce itself.
  std::chrono::milliseconds connectTimeout{5000};
  // The engine's GPU runtime, for a backend that moves GPU memory through its copy engines
  // (socket); null: none.
  std::shared_ptr<gpu::GpuRuntime> gpuRuntime;
  // Connect only to peers on this host (loopback addresses), for a backend whose peer
  // addresses are plain host and port (socket): set where peers are not authenticated, so
  // that an unauthenticated hello cannot make the agent dial any address and port it names.
  bool loopbackPeersOnly = false;
  // What a backend that protects its own connections (socket: frame_protection.h) protects
  // at least (kvx/agent_options.h, DataProtection; kAuto counts as kHeaders).
  DataProtection dataProtection = DataProtection::kHeaders;
};

// A packed remote key from a peer's metadata, and the kind of memory it reaches.
struct PeerKey {
  std::span<const std::uint8_t> packed;
  MemoryKind kind = MemoryKind::kHost;
};

// Called, from inside progress(), once for each received message. The spans are valid only
// during the call: copy what must be kept. Must not call back into the transport.
using MessageHandler = std::function<void(std::span<const std::uint8_t> header,
                                          std::span<const std::uint8_t> payload)>;

// Work a thread must do before it moves memory through a transport (make a CUDA context
// current, for a UCX that copies device memory on the calling thread). Returns true once the
// thread is ready for good; false when there is nothing to do yet (no device chosen), so
// that the thread's next call asks again.
using ThreadSetup = std::function<bool()>;

// Called, from inside progress(), once when an endpoint fails (peer died, link cut).
// Must not call back into the transport.
using EndpointErrorHandler = std::function<void(const Status& status)>;

// Thread safety: every member may be called from any thread. progress() may run on one
// thread while others post on endpoints; the transport serialises access to its resources.
// Lifetime: endpoints and TransportMemory objects must be released before the transport.
class Transport {
 public:
  virtual ~Transport() = default;

  virtual std::string_view name() const = 0;

  // The opaque address a peer passes to connect() to reach this transport.
  virtual std::vector<std::uint8_t> localAddress() const = 0;

  virtual bool supportsMemoryKind(MemoryKind kind) const = 0;
  // Runs `setup` on every thread before its first call into the transport (progress, posts,
  // registrations), until it returns true on that thread. Set it before the transport is used
  // from more than one thread. Transports that need no per-thread work ignore it.
  virtual void setThreadSetup(ThreadSetup setup) { (void)setup; }
  // Why this transport cannot move memory of `kind` ("UCX 1.13.1 was built without CUDA
  // support"); empty when it can.
  virtual std::string whyNotMemoryKind(MemoryKind kind) const {
    if (supportsMemoryKind(kind)) return {};
    return "the " + std::string(name()) + " transport cannot move " + std::string(toString(kind)) +
           " memory";
  }

  // How the transport moves CUDA memory when it can but not by GPUDirect ("through host
  // memory: ..."); empty when its path for CUDA memory is GPUDirect (or it has none).
  virtual std::string howMovesCuda() const { return {}; }
  // Registers caller-owned memory.
  virtual Result<std::unique_ptr<TransportMemory>> registerMemory(void* address,
                                                                  std::uint64_t length,
                                                                  MemoryKind kind, int device) = 0;
  // Allocates and registers memory the transport owns (freed with the TransportMemory).
  virtual Result<std::unique_ptr<TransportMemory>> allocateMemory(std::uint64_t length,
                                                                  MemoryKind kind, int device) = 0;

  // Creates an endpoint to the transport at `peerAddress`. A backend whose library trusts
  // peers' bytes (UCX) checks `peerAddress` first and refuses what its library cannot take.
  virtual Result<std::shared_ptr<Endpoint>> connect(std::span<const std::uint8_t> peerAddress,
                                                    EndpointErrorHandler onError) = 0;

  // Checks a peer's packed remote keys before any of them is unpacked (the engine calls it
  // when a peer's metadata arrives): INVALID_ARGUMENT for a key this backend's library cannot
  // take. OK by default: a backend that parses keys itself checks them as it parses.
  virtual Status checkPeerKeys(std::span<const std::uint8_t> peerAddress,
                               std::span<const PeerKey> keys) {
    (void)peerAddress;
    (void)keys;
    return Status::ok();
  }

  // Stops placing what the peer at `peerAddress` still sends to this transport: the engine
  // calls it when it removes the peer, after closing its endpoint to it and before it
  // announces the departure, so that no byte of the peer's writes lands once the owner of
  // the memory may have reused it. A backend whose endpoint close already covers both
  // directions (UCX over tcp or RDMA: one endpoint per peer pair, whose queued messages are
  // dropped once it is closed) needs nothing more; one that serves the peer's own connections
  // separately (socket) ends them; the in-process one refuses the peer's copies. Where the
  // peer's process copies into this memory itself (UCX over shared memory), nothing here can
  // stop it: Endpoint::peerWritesDirectly says so, and the owner must wait for the peer.
  virtual void dropPeer(std::span<const std::uint8_t> peerAddress) { (void)peerAddress; }

  // Installs the receive handler for messages (set once, before peers connect).
  virtual void setMessageHandler(MessageHandler handler) = 0;

  // Non-blocking: makes whatever progress is possible now. Returns true if anything happened.
  virtual bool progress() = 0;

  // Sleeping: a driver that found nothing to do calls arm(); if it returns true it may block
  // in poll() on eventFd() until it becomes readable (or wake() is called). If arm() returns
  // false there is more work: call progress() again. eventFd() is -1 when the transport
  // cannot sleep; the driver then polls with a short timeout.
  virtual int eventFd() const = 0;
  virtual bool arm() = 0;
  virtual void wake() = 0;
};

}  // namespace kvx::engine
