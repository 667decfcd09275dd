#include "engine/transport/socket/socket_transport.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "crypto/random_bytes.h"
#include "engine/memory/address_range.h"
#include "engine/transport/socket/socket_endpoint.h"
#include "engine/transport/socket/socket_inbound.h"
#include "engine/transport/socket/socket_transport_factory.h"

namespace kvx::engine::socket {
namespace {

constexpr std::uint64_t kWakeId = 1;
constexpr std::uint64_t kListenId = 2;
constexpr auto kTickInterval = std::chrono::milliseconds(5);
constexpr int kMaxEvents = 64;
constexpr auto kAcceptPause = std::chrono::milliseconds(100);

std::uint64_t randomWord() {
  std::uint64_t value = 0;
  while (value == 0) {
    if (::getrandom(&value, sizeof(value), 0) != static_cast<ssize_t>(sizeof(value))) value = 0;
  }
  return value;
}

// UCX_NET_DEVICES pins this transport as it pins UCX, so that one setting moves either data
// path; "all" (UCX's default) means every interface.
std::string netDevicesFor(const TransportOptions& options) {
  const char* pinned = std::getenv("UCX_NET_DEVICES");
  const std::string devices = pinned != nullptr && *pinned != '\0' ? pinned : options.netDevices;
  return devices == "all" ? std::string() : devices;
}

Status systemError(const std::string& what) {
  return transportError("socket transport: " + what + ": " + std::strerror(errno));
}

}  // namespace

Result<std::unique_ptr<Transport>> createSocketTransport(const TransportOptions& options) {
  return SocketTransport::create(options);
}

SocketTransport::SocketTransport(const TransportOptions& options)
    : agentName_(options.agentName),
      connectTimeout_(options.connectTimeout),
      loopbackPeersOnly_(options.loopbackPeersOnly),
      deviceCopies_(options.gpuRuntime) {
  address_.instance = randomWord();
  address_.protection = options.dataProtection == DataProtection::kAuto
                            ? kProtectHeaders
                            : static_cast<std::uint32_t>(options.dataProtection);
}

Result<std::unique_ptr<Transport>> SocketTransport::create(const TransportOptions& options) {
  std::unique_ptr<SocketTransport> transport(new SocketTransport(options));
  KVX_RETURN_IF_ERROR(
      crypto::randomBytes(transport->address_.dataKey, "the socket transport's data key"));
  transport->epollFd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (transport->epollFd_ < 0) return systemError("epoll_create1");
  transport->wakeFd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (transport->wakeFd_ < 0) return systemError("eventfd");
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.u64 = kWakeId;
  if (::epoll_ctl(transport->epollFd_, EPOLL_CTL_ADD, transport->wakeFd_, &wake) != 0) {
    return systemError("epoll_ctl");
  }
  KVX_RETURN_IF_ERROR(transport->listen(netDevicesFor(options)));
  return std::unique_ptr<Transport>(std::move(transport));
}

Status SocketTransport::listen(const std::string& netDevices) {
  KVX_ASSIGN_OR_RETURN(ListenPlan plan, planListen(netDevices));
  listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listenFd_ < 0) return systemError("socket");
  const int one = 1;
  ::setsockopt(listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_addr.s_addr = plan.bindAddress;
  if (::bind(listenFd_, reinterpret_cast<const sockaddr*>(&local), sizeof(local)) != 0) {
    return systemError("bind to " + formatIpv4(plan.bindAddress, 0));
  }
  if (::listen(listenFd_, 128) != 0) return systemError("listen");
  socklen_t length = sizeof(local);
  if (::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&local), &length) != 0) {
    return systemError("getsockname");
  }
  address_.port = ntohs(local.sin_port);
  address_.addresses = plan.published;
  packedAddress_ = packSocketAddress(address_);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = kListenId;
  if (::epoll_ctl(epollFd_, EPOLL_CTL_ADD, listenFd_, &event) != 0) return systemError("epoll_ctl");
  return Status::ok();
}

SocketTransport::~SocketTransport() {
  {
    CallerLock lock(mutex_);
    for (auto& [id, connection] : inbound_) connection->endLocked(cancelled("transport closing"));
    inbound_.clear();
  }
  if (listenFd_ >= 0) ::close(listenFd_);
  if (wakeFd_ >= 0) ::close(wakeFd_);
  if (epollFd_ >= 0) ::close(epollFd_);
}

std::string SocketTransport::whyNotMemoryKind(MemoryKind kind) const {
  if (supportsMemoryKind(kind)) return {};
  if (kind == MemoryKind::kCuda) return deviceCopies_.whyNot();
  return "the socket transport reads and writes with the CPU, which cannot reach " +
         std::string(toString(kind)) + " memory";
}

Result<std::unique_ptr<TransportMemory>> SocketTransport::addRegion(
    std::uint8_t* address, std::uint64_t length, MemoryKind kind, int device,
    std::unique_ptr<std::uint8_t[]> owned) {
  if (kind != MemoryKind::kCuda) device = -1;
  RegionKey key;
  key.secret = randomWord();
  key.address = reinterpret_cast<std::uint64_t>(address);
  key.length = length;
  {
    CallerLock lock(mutex_);
    key.region = nextRegion_++;
    regions_[key.region] = Region{key.secret, key.address, key.length, device};
  }
  return std::unique_ptr<TransportMemory>(
      new SocketMemory(*this, key, kind, device, std::move(owned)));
}

Result<std::unique_ptr<TransportMemory>> SocketTransport::registerMemory(void* address,
                                                                         std::uint64_t length,
                                                                         MemoryKind kind,
                                                                         int device) {
  if (address == nullptr || length == 0) {
    return invalidArgument("cannot register " + std::to_string(length) + " bytes at " +
                           (address ? "a valid address" : "a null address"));
  }
  if (!supportsMemoryKind(kind)) return unimplemented(whyNotMemoryKind(kind));
  if (kind == MemoryKind::kCuda && device < 0) {
    return invalidArgument("CUDA memory registered without its device (" + std::to_string(device) +
                           ")");
  }
  return addRegion(static_cast<std::uint8_t*>(address), length, kind, device, nullptr);
}

Result<std::unique_ptr<TransportMemory>> SocketTransport::allocateMemory(std::uint64_t length,
                                                                         MemoryKind kind,
                                                                         int /*device*/) {
  if (length == 0) return invalidArgument("cannot allocate 0 bytes");
  if (kind != MemoryKind::kHost) {
    return unimplemented("the socket transport allocates host memory only; register " +
                         std::string(toString(kind)) + " memory from the GPU runtime instead");
  }
  std::unique_ptr<std::uint8_t[]> buffer(new (std::nothrow) std::uint8_t[length]());
  if (!buffer) return resourceExhausted("cannot allocate " + std::to_string(length) + " bytes");
  std::uint8_t* address = buffer.get();
  return addRegion(address, length, kind, -1, std::move(buffer));
}

void SocketTransport::deregister(std::uint64_t region) {
  CallerLock lock(mutex_);
  regions_.erase(region);
  for (auto& [id, connection] : inbound_) {
    if (connection->touchesRegionLocked(region)) {
      connection->endLocked(cancelled("region " + std::to_string(region) +
                                      " was deregistered while bytes of it were moving"));
    }
  }
}

void SocketTransport::dropPeer(std::span<const std::uint8_t> peerAddress) {
  Result<SocketAddress> peer = parseSocketAddress(peerAddress);
  if (!peer.isOk()) return;  // never connected: nothing of it is served here
  CallerLock lock(mutex_);
  for (auto& [id, connection] : inbound_) {
    if (connection->initiatorLocked() == peer->instance) {
      const std::uint64_t unread = connection->unreadLocked();
      connection->endLocked(
          peerFailed("socket data connection from the removed peer at " +
                     formatIpv4(peer->addresses.empty() ? 0 : peer->addresses[0], peer->port) +
                     ": " + std::to_string(unread) +
                     " bytes it sent were still unread; they and what follows are " + "dropped"));
    }
  }
}

Result<RegionAccess> SocketTransport::accessLocked(std::uint64_t region, std::uint64_t key,
                                                   std::uint64_t address,
                                                   std::uint64_t length) const {
  auto found = regions_.find(region);
  if (found == regions_.end()) {
    return notFound("region " + std::to_string(region) + " is not registered with the socket " +
                    "transport of '" + agentName_ + "' (deregistered, or a stale key)");
  }
  const Region& entry = found->second;
  if (entry.secret != key) {
    return unauthenticated("wrong key for region " + std::to_string(region) + " of '" + agentName_ +
                           "'");
  }
  if (!rangeWithin(entry.address, entry.length, address, length)) {
    return invalidArgument("range " + describeRange(address, length) + " is outside region " +
                           std::to_string(region) + " of '" + agentName_ + "' " +
                           describeRange(entry.address, entry.length));
  }
  return RegionAccess{reinterpret_cast<std::uint8_t*>(address), entry.device};
}

Result<std::shared_ptr<Endpoint>> SocketTransport::connect(
    std::span<const std::uint8_t> peerAddress, EndpointErrorHandler onError) {
  KVX_ASSIGN_OR_RETURN(SocketAddress peer, parseSocketAddress(peerAddress));
  if (loopbackPeersOnly_) {
    std::string offered;
    for (std::uint32_t address : peer.addresses) {
      offered += (offered.empty() ? "" : ", ") + formatIpv4(address, peer.port);
    }
    std::erase_if(peer.addresses, [](std::uint32_t address) { return !isLoopbackIpv4(address); });
    if (peer.addresses.empty()) {
      return unauthenticated(
          "the socket transport connects only to peers on this host while peers are not "
          "authenticated, and the peer offered " +
          offered + "; configure an auth token (KVX_AUTH_TOKEN) or TLS to reach other hosts");
    }
  }
  auto endpoint = std::make_shared<SocketEndpoint>(*this, std::move(peer), std::move(onError));
  {
    CallerLock lock(mutex_);
    KVX_RETURN_IF_ERROR(endpoint->startLocked(SocketConnection::Clock::now()));
  }
  wake();  // a sleeping driver must start watching the connect
  return std::shared_ptr<Endpoint>(std::move(endpoint));
}

void SocketTransport::setMessageHandler(MessageHandler handler) {
  CallerLock lock(mutex_);
  handler_ = std::move(handler);
}

void SocketTransport::deliverMessageLocked(std::span<const std::uint8_t> header,
                                           std::span<const std::uint8_t> payload) {
  if (handler_) handler_(header, payload);
}

std::uint64_t SocketTransport::addConnectionLocked(SocketConnection* connection, int fd,
                                                   bool wantWrite) {
  const std::uint64_t id = nextConnection_++;
  watched_[id] = Watched{connection, -1, false};
  watchLocked(id, fd, wantWrite);
  return id;
}

void SocketTransport::watchLocked(std::uint64_t id, int fd, bool wantWrite, bool wantRead) {
  auto found = watched_.find(id);
  if (found == watched_.end()) return;
  Watched& entry = found->second;
  epoll_event event{};
  event.events = (wantRead ? EPOLLIN : 0u) | (wantWrite ? EPOLLOUT : 0u);
  event.data.u64 = id;
  if (entry.fd != fd) {
    if (entry.fd >= 0) ::epoll_ctl(epollFd_, EPOLL_CTL_DEL, entry.fd, nullptr);
    if (fd >= 0) ::epoll_ctl(epollFd_, EPOLL_CTL_ADD, fd, &event);
  } else if (fd >= 0) {
    ::epoll_ctl(epollFd_, EPOLL_CTL_MOD, fd, &event);
  }
  entry.fd = fd;
  entry.wantWrite = wantWrite;
}

void SocketTransport::removeConnectionLocked(std::uint64_t id, int fd) {
  if (fd >= 0) ::epoll_ctl(epollFd_, EPOLL_CTL_DEL, fd, nullptr);
  watched_.erase(id);
  attention_.erase(id);
}

void SocketTransport::attendLocked(std::uint64_t id) {
  attention_.insert(id);
  const std::uint64_t one = 1;
  (void)::write(wakeFd_, &one, sizeof(one));
}

bool SocketTransport::dispatchLocked(std::uint64_t id, std::uint32_t events) {
  auto found = watched_.find(id);
  if (found == watched_.end()) return false;  // closed earlier in this call
  SocketConnection* connection = found->second.connection;
  const bool moved = connection->onEventsLocked(events);
  if (watched_.count(id) != 0 && connection->needsAttentionLocked()) attention_.insert(id);
  return moved;
}

void SocketTransport::deferErrorLocked(EndpointErrorHandler handler, Status status) {
  deferredErrors_.emplace_back(std::move(handler), std::move(status));
  const std::uint64_t one = 1;
  (void)::write(wakeFd_, &one, sizeof(one));
}

void SocketTransport::retireLocked(std::uint64_t id) { retired_.push_back(id); }

bool SocketTransport::acceptLocked() {
  bool any = false;
  for (;;) {
    sockaddr_in from{};
    socklen_t length = sizeof(from);
    const int fd = ::accept4(listenFd_, reinterpret_cast<sockaddr*>(&from), &length,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int error = errno;
      if (error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM) {
        // The pending connection stays queued and the listener readable: stop watching it
        // for a while rather than spin on it.
        spdlog::warn("[{}] socket transport: accept: {}; not accepting for {} ms", agentName_,
                     std::strerror(error), kAcceptPause.count());
        ::epoll_ctl(epollFd_, EPOLL_CTL_DEL, listenFd_, nullptr);
        acceptPausedUntil_ = SocketConnection::Clock::now() + kAcceptPause;
      }
      return any;
    }
    any = true;
    if (inbound_.size() >= kMaxInboundConnections) {
      ::close(fd);
      continue;
    }
    SocketStream::configureSocket(fd);
    auto connection = std::make_unique<InboundConnection>(
        *this, fd, formatIpv4(from.sin_addr.s_addr, ntohs(from.sin_port)),
        SocketConnection::Clock::now());
    const std::uint64_t id = addConnectionLocked(connection.get(), fd, false);
    connection->setId(id);
    inbound_[id] = std::move(connection);
  }
}

void SocketTransport::tickLocked() {
  const auto now = SocketConnection::Clock::now();
  if (now - lastTick_ < kTickInterval) return;
  lastTick_ = now;
  if (acceptPausedUntil_ && now >= *acceptPausedUntil_) {
    acceptPausedUntil_.reset();
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = kListenId;
    ::epoll_ctl(epollFd_, EPOLL_CTL_ADD, listenFd_, &event);
  }
  std::vector<SocketConnection*> connections;
  connections.reserve(watched_.size());
  for (auto& [id, entry] : watched_) connections.push_back(entry.connection);
  for (SocketConnection* connection : connections) connection->onTickLocked(now);
}

bool SocketTransport::retireConnectionsLocked() {
  if (retired_.empty()) return false;
  for (std::uint64_t id : retired_) inbound_.erase(id);
  retired_.clear();
  return true;
}

bool SocketTransport::progress() {
  std::vector<std::pair<EndpointErrorHandler, Status>> errors;
  bool any = false;
  {
    ProgressLock lock(mutex_);
    any = progressLocked();
    errors.swap(deferredErrors_);
  }
  for (auto& [handler, status] : errors) {
    if (handler) handler(status);
  }
  return any || !errors.empty();
}

bool SocketTransport::progressLocked() {
  bool any = false;
  std::set<std::uint64_t> attention;
  attention.swap(attention_);
  for (std::uint64_t id : attention) any = dispatchLocked(id, EPOLLIN) || any;
  epoll_event events[kMaxEvents];
  const int ready = ::epoll_wait(epollFd_, events, kMaxEvents, 0);
  for (int i = 0; i < ready; ++i) {
    const std::uint64_t id = events[i].data.u64;
    if (id == kWakeId) {
      std::uint64_t count = 0;
      (void)::read(wakeFd_, &count, sizeof(count));
      continue;
    }
    if (id == kListenId) {
      any = acceptLocked() || any;
      continue;
    }
    any = dispatchLocked(id, events[i].events) || any;
  }
  tickLocked();
  any = retireConnectionsLocked() || any;
  return any;
}

bool SocketTransport::arm() {
  ProgressLock lock(mutex_);
  return deferredErrors_.empty() && retired_.empty() && attention_.empty();
}

void SocketTransport::wake() {
  const std::uint64_t one = 1;
  (void)::write(wakeFd_, &one, sizeof(one));
}

}  // namespace kvx::engine::socket
