#pragma once

// SocketTransport: kvx's own TCP data path, for hosts without RDMA where UCX would emulate
// one-sided operations over tcp anyway. Puts and gets are frames on one TCP connection per
// endpoint (socket_wire.h), answered in order by the peer transport, which checks every
// request against the regions registered with it (id, 64-bit secret, bounds) before it
// touches memory.
//
// What it guarantees beyond the Transport contract:
//   - a failure never takes the process down: a dead, reset or garbage-speaking peer ends
//     that connection with PEER_FAILED, and only it;
//   - a forced close resets the connection (RST), so nothing this side had queued is
//     delivered later, and the peer drops the rest of any put it was placing once it sees
//     the reset;
//   - a removed peer's own connections are ended too (dropPeer): what it still sends, up to
//     a whole queue of puts unread in this side's sockets, is not placed;
//   - connecting never blocks the caller: the connect runs in progress(), bounded by
//     TransportOptions::connectTimeout, and operations posted meanwhile wait for it;
//   - an inbound connection that does not introduce itself within the connect timeout, or
//     beyond kMaxInboundConnections, is closed.
// It listens on, and publishes, the IPv4 addresses of TransportOptions::netDevices, or of
// UCX_NET_DEVICES when that is set (one setting pins either data path; "all" or empty: every
// interface that is up). Host memory only (whyNotMemoryKind says so for device memory: the
// engine stages it).
//
// Threads: every member may be called from any thread; one mutex guards all state, and
// completions and messages are delivered under it (the Transport contract); endpoint error
// handlers run from progress() after it released the lock.

#include <sys/epoll.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/progress/caller_first_mutex.h"
#include "engine/transport/socket/region_access.h"
#include "engine/transport/socket/socket_address.h"
#include "engine/transport/socket/socket_connection.h"
#include "engine/transport/socket/socket_device_copies.h"
#include "engine/transport/socket/socket_memory.h"
#include "engine/transport/transport.h"

namespace kvx::engine::socket {

class InboundConnection;

inline constexpr std::size_t kMaxInboundConnections = 1024;

class SocketTransport final : public Transport {
 public:
  static Result<std::unique_ptr<Transport>> create(const TransportOptions& options);
  ~SocketTransport() override;

  std::string_view name() const override { return "socket"; }
  std::vector<std::uint8_t> localAddress() const override { return packedAddress_; }
  std::string howMovesCuda() const override {
    return "through host memory: a copy engine copies every byte, the CPU sends it over TCP";
  }
  // Host memory, and CUDA memory when the GPU runtime has a device (through copies).
  bool supportsMemoryKind(MemoryKind kind) const override {
    return kind == MemoryKind::kHost ||
           (kind == MemoryKind::kCuda && deviceCopies_.whyNot().empty());
  }
  std::string whyNotMemoryKind(MemoryKind kind) const override;
  Result<std::unique_ptr<TransportMemory>> registerMemory(void* address, std::uint64_t length,
                                                          MemoryKind kind, int device) override;
  Result<std::unique_ptr<TransportMemory>> allocateMemory(std::uint64_t length, MemoryKind kind,
                                                          int device) override;
  Result<std::shared_ptr<Endpoint>> connect(std::span<const std::uint8_t> peerAddress,
                                            EndpointErrorHandler onError) override;
  // Ends (resets) the inbound connections whose hello named the peer's instance: what they
  // still carry is not placed.
  void dropPeer(std::span<const std::uint8_t> peerAddress) override;
  void setMessageHandler(MessageHandler handler) override;
  bool progress() override;
  int eventFd() const override { return epollFd_; }
  bool arm() override;
  void wake() override;

  // For this transport's connections and memory: the lock that guards all state, taken as a
  // caller through CallerLock (ahead of the progress thread, see CallerFirstMutex).
  CallerFirstMutex& mutex() KVX_RETURN_CAPABILITY(mutex_) { return mutex_; }
  std::uint64_t instance() const { return address_.instance; }
  // The key this transport's data connections derive theirs from (socket_address.h), and
  // the least protection it takes of them (TransportOptions::dataProtection, as
  // socket_wire.h's kProtect* values).
  const crypto::Key256& dataKey() const { return address_.dataKey; }
  std::uint32_t leastProtection() const { return address_.protection; }
  std::chrono::milliseconds connectTimeout() const { return connectTimeout_; }
  const std::string& agentName() const { return agentName_; }
  // REQUIRES: mutex(). Watches `fd` for `connection`; returns its id.
  std::uint64_t addConnectionLocked(SocketConnection* connection, int fd, bool wantWrite)
      KVX_REQUIRES(mutex_);
  // REQUIRES: mutex(). Changes what is watched (a new fd after a retried connect, or write
  // interest; read interest off while a connection's answers are backed up).
  void watchLocked(std::uint64_t id, int fd, bool wantWrite, bool wantRead = true)
      KVX_REQUIRES(mutex_);
  // REQUIRES: mutex(). The connection needs a call without an epoll event (see
  // SocketConnection::needsAttentionLocked); wakes a sleeping driver.
  void attendLocked(std::uint64_t id) KVX_REQUIRES(mutex_);
  // REQUIRES: mutex(). One round of progress: connections that need attention, socket
  // events, deadlines. Error handlers it queues run from progress() (or the next one).
  bool progressLocked() KVX_REQUIRES(mutex_);
  // REQUIRES: mutex(). Stops watching; `fd` may already be closed (-1).
  void removeConnectionLocked(std::uint64_t id, int fd) KVX_REQUIRES(mutex_);
  // REQUIRES: mutex(). `handler` runs with `status` from the next progress(), after it has
  // released the lock (an error handler may close endpoints).
  void deferErrorLocked(EndpointErrorHandler handler, Status status) KVX_REQUIRES(mutex_);
  // REQUIRES: mutex(). The inbound connection is destroyed from the next progress().
  void retireLocked(std::uint64_t id) KVX_REQUIRES(mutex_);
  // REQUIRES: mutex(). Checks a request against the registered regions.
  Result<RegionAccess> accessLocked(std::uint64_t region, std::uint64_t key, std::uint64_t address,
                                    std::uint64_t length) const KVX_REQUIRES(mutex_);
  // REQUIRES: mutex(). Runs the message handler.
  void deliverMessageLocked(std::span<const std::uint8_t> header,
                            std::span<const std::uint8_t> payload) KVX_REQUIRES(mutex_);
  // REQUIRES: mutex(). Copies between host bytes and GPU memory (SocketDeviceCopies).
  SocketDeviceCopies& deviceCopiesLocked() KVX_REQUIRES(mutex_) { return deviceCopies_; }
  // Forgets a region (SocketMemory's destructor); closes connections moving its bytes.
  void deregister(std::uint64_t region);

 private:
  struct Region {
    std::uint64_t secret = 0;
    std::uint64_t address = 0;
    std::uint64_t length = 0;
    int device = -1;  // GPU memory of this device; -1: host memory
  };
  struct Watched {
    SocketConnection* connection = nullptr;
    int fd = -1;
    bool wantWrite = false;
  };

  explicit SocketTransport(const TransportOptions& options);
  Status listen(const std::string& netDevices);
  Result<std::unique_ptr<TransportMemory>> addRegion(std::uint8_t* address, std::uint64_t length,
                                                     MemoryKind kind, int device,
                                                     std::unique_ptr<std::uint8_t[]> owned);
  bool dispatchLocked(std::uint64_t id, std::uint32_t events) KVX_REQUIRES(mutex_);
  bool acceptLocked() KVX_REQUIRES(mutex_);
  void tickLocked() KVX_REQUIRES(mutex_);
  bool retireConnectionsLocked() KVX_REQUIRES(mutex_);

  std::string agentName_;
  std::chrono::milliseconds connectTimeout_;
  bool loopbackPeersOnly_;
  int epollFd_ = -1;
  int wakeFd_ = -1;
  int listenFd_ = -1;
  SocketAddress address_;
  std::vector<std::uint8_t> packedAddress_;
  // whyNot() is fixed at construction and read without the lock; the copies need it.
  SocketDeviceCopies deviceCopies_;

  // Callers through lock(), the progress thread through progress() and arm().
  CallerFirstMutex mutex_;
  MessageHandler handler_ KVX_GUARDED_BY(mutex_);
  std::unordered_map<std::uint64_t, Region> regions_ KVX_GUARDED_BY(mutex_);
  std::uint64_t nextRegion_ KVX_GUARDED_BY(mutex_) = 1;
  std::unordered_map<std::uint64_t, Watched> watched_ KVX_GUARDED_BY(mutex_);  // by id
  std::unordered_map<std::uint64_t, std::unique_ptr<InboundConnection>> inbound_
      KVX_GUARDED_BY(mutex_);  // by id
  std::vector<std::uint64_t> retired_ KVX_GUARDED_BY(mutex_);
  std::set<std::uint64_t> attention_ KVX_GUARDED_BY(mutex_);
  std::vector<std::pair<EndpointErrorHandler, Status>> deferredErrors_ KVX_GUARDED_BY(mutex_);
  std::uint64_t nextConnection_ KVX_GUARDED_BY(mutex_) = 3;  // 1, 2 below
  SocketConnection::Clock::time_point lastTick_ KVX_GUARDED_BY(mutex_) = {};
  // Set while the listener is unwatched after accept ran out of descriptors.
  std::optional<SocketConnection::Clock::time_point> acceptPausedUntil_ KVX_GUARDED_BY(mutex_);
};

}  // namespace kvx::engine::socket
