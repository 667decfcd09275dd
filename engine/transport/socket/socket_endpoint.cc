#include "engine/transport/socket/socket_endpoint.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/memory/address_range.h"
#include "engine/transport/socket/socket_memory.h"
#include "engine/transport/socket/socket_transport.h"
#include "sync/mutex.h"

namespace kvx::engine::socket {
namespace {

// How long a graceful close waits for the operations in flight before it resets.
constexpr auto kGracefulCloseTimeout = std::chrono::seconds(5);

// `peer` with only the addresses an endpoint connects to (addressesToTry).
SocketAddress reachableOnly(SocketAddress peer) {
  peer.addresses = addressesToTry(peer.addresses);
  return peer;
}

// What to add to a connect failure when `peer` published loopback addresses only: such a
// peer is reachable from its own host alone, which is what a peer on another host whose net
// devices were set to loopback looks like.
std::string loopbackHint(const SocketAddress& peer) {
  const bool loopbackOnly =
      std::all_of(peer.addresses.begin(), peer.addresses.end(), isLoopbackIpv4);
  if (!loopbackOnly) return {};
  return " (the peer published loopback addresses only: it can be reached from its own host "
         "alone; if it runs on another host, set its net devices to an interface that reaches "
         "this one, or to auto)";
}

}  // namespace

SocketEndpoint::SocketEndpoint(SocketTransport& transport, SocketAddress peer,
                               EndpointErrorHandler onError)
    : transport_(transport),
      peer_(reachableOnly(std::move(peer))),
      protection_(std::max(transport.leastProtection(), peer_.protection)),
      nonce_(freshNonce()),
      onError_(std::move(onError)),
      stream_(-1, formatIpv4(peer_.addresses.front(), peer_.port)) {
  FrameHeader hello;
  hello.type = FrameType::kHello;
  hello.aux = protection_;
  hello.region = peer_.instance;
  hello.key = transport_.instance();
  hello.length = kNonceBytes;
  if (nonce_.isOk()) stream_.queuePlain(hello, std::string(nonce_->begin(), nonce_->end()));
}

SocketEndpoint::~SocketEndpoint() {
  CallerLock lock(transport_.mutex());
  if (state_ != State::kClosed) closeLocked(true);
}

Status SocketEndpoint::startLocked(Clock::time_point now) {
  transport_.mutex().assumeHeld();
  connectDeadline_ = now + transport_.connectTimeout();
  if (!nonce_.isOk()) return nonce_.status();
  if (!tryNextAddressLocked()) {
    return peerFailed("cannot start a socket data connection to " + stream_.peer() + ":" +
                      connectErrors_ + loopbackHint(peer_));
  }
  return Status::ok();
}

bool SocketEndpoint::tryNextAddressLocked() {
  while (nextAddress_ < peer_.addresses.size()) {
    const std::uint32_t ip = peer_.addresses[nextAddress_++];
    const std::string name = formatIpv4(ip, peer_.port);
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      connectErrors_ += " " + name + ": socket: " + std::strerror(errno) + ";";
      continue;
    }
    SocketStream::configureSocket(fd);
    sockaddr_in target{};
    target.sin_family = AF_INET;
    target.sin_port = htons(peer_.port);
    target.sin_addr.s_addr = ip;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&target), sizeof(target)) != 0 &&
        errno != EINPROGRESS) {
      connectErrors_ += " " + name + ": " + std::strerror(errno) + ";";
      ::close(fd);
      continue;
    }
    if (id_ == 0) {
      id_ = transport_.addConnectionLocked(this, fd, true);
    } else {
      transport_.watchLocked(id_, fd, true);
    }
    watchingWrite_ = true;
    stream_.adoptSocket(fd, name);
    sync::MutexLock lock(descriptionMutex_);
    description_ = "socket/tcp " + name + " (" + std::string(describeProtection(protection_)) + ")";
    return true;
  }
  return false;
}

Result<std::unique_ptr<RemoteKey>> SocketEndpoint::unpackRemoteKey(
    std::span<const std::uint8_t> packed, MemoryKind /*kind*/) {
  KVX_ASSIGN_OR_RETURN(RegionKey key, parseRegionKey(packed));
  return std::unique_ptr<RemoteKey>(new SocketRemoteKey(key));
}

Status SocketEndpoint::unusableLocked() const {
  if (state_ == State::kClosed) {
    return failedPrecondition("the socket data path to " + stream_.peer() + " is closed");
  }
  if (state_ == State::kFailed) return failure_;
  return Status::ok();
}

Status SocketEndpoint::checkRma(const RmaOp& op) const {
  const auto* key = dynamic_cast<const SocketRemoteKey*>(op.remoteKey);
  if (key == nullptr) return invalidArgument("the operation has no socket transport remote key");
  if (op.localAddress == nullptr || op.length == 0) {
    return invalidArgument("an operation needs a local buffer and a length (got " +
                           std::to_string(op.length) + " bytes at " +
                           (op.localAddress ? "a buffer" : "null") + ")");
  }
  if (!key->key().covers(op.remoteAddress, op.length)) {
    return invalidArgument("remote range " + describeRange(op.remoteAddress, op.length) +
                           " is outside the peer's region " +
                           describeRange(key->key().address, key->key().length));
  }
  const auto local = reinterpret_cast<std::uintptr_t>(op.localAddress);
  if (op.localMemory != nullptr) {
    const auto registered = reinterpret_cast<std::uintptr_t>(op.localMemory->address());
    if (!rangeWithin(registered, op.localMemory->length(), local, op.length)) {
      return invalidArgument("local range " + describeRange(local, op.length) +
                             " is outside its registration " +
                             describeRange(registered, op.localMemory->length()));
    }
  }
  return Status::ok();
}

void SocketEndpoint::postRmaLocked(const RmaOp& op, bool write, Completion* completion) {
  Status refused = unusableLocked();
  if (refused.isOk()) refused = checkRma(op);
  if (!refused.isOk()) {
    completion->onComplete(refused);
    return;
  }
  const RegionKey& key = static_cast<const SocketRemoteKey*>(op.remoteKey)->key();
  FrameHeader header;
  header.type = write ? FrameType::kPut : FrameType::kGet;
  header.sequence = ++sequence_;
  header.region = key.region;
  header.key = key.secret;
  header.address = op.remoteAddress;
  header.length = op.length;
  auto* local = static_cast<std::uint8_t*>(op.localAddress);
  const int device = localDevice(op);
  if (device < 0 && op.localMemory != nullptr && op.localMemory->kind() == MemoryKind::kCuda) {
    completion->onComplete(invalidArgument(
        "CUDA memory that is not registered with this socket transport: it cannot reach it"));
    return;
  }
  std::string fromDevice;
  if (write && device >= 0) {
    // GPU memory goes out from a host copy taken now: the CPU never reads the device.
    fromDevice.assign(op.length, '\0');
    const Status copied = transport_.deviceCopiesLocked().fromDevice(
        std::span<std::uint8_t>(reinterpret_cast<std::uint8_t*>(fromDevice.data()), op.length),
        local, device);
    if (!copied.isOk()) {
      completion->onComplete(copied.withContext("put to " + stream_.peer()));
      return;
    }
  }
  pending_.push_back(
      {header.type, header.sequence, completion, write ? nullptr : local, op.length, device});
  if (write && device >= 0) {
    stream_.queueOwned(header, std::move(fromDevice));
  } else if (write) {
    stream_.queue(header, std::span<const std::uint8_t>(local, op.length));
  } else {
    stream_.queue(header);
  }
}

int SocketEndpoint::localDevice(const RmaOp& op) {
  if (op.localMemory == nullptr) return -1;
  const auto* memory = dynamic_cast<const SocketMemory*>(&op.localMemory->registration());
  if (memory == nullptr || memory->kind() != MemoryKind::kCuda) return -1;
  return memory->device();
}

void SocketEndpoint::put(const RmaOp& op, Completion* completion) {
  CallerLock lock(transport_.mutex());
  postRmaLocked(op, true, completion);
  kickLocked(true);
}

void SocketEndpoint::get(const RmaOp& op, Completion* completion) {
  CallerLock lock(transport_.mutex());
  postRmaLocked(op, false, completion);
  kickLocked(true);
}

void SocketEndpoint::postBatch(std::span<const RmaOp> ops, bool write, Completion* completion) {
  CallerLock lock(transport_.mutex());
  for (const RmaOp& op : ops) postRmaLocked(op, write, completion);
  kickLocked(true);
}

void SocketEndpoint::flush(Completion* completion) {
  CallerLock lock(transport_.mutex());
  Status refused = unusableLocked();
  if (!refused.isOk()) {
    completion->onComplete(refused);
  } else if (pending_.empty()) {
    completion->onComplete(Status::ok());
  } else {
    pending_.push_back({FrameType::kHello, 0, completion, nullptr, 0});
  }
}

void SocketEndpoint::sendMessage(std::span<const std::uint8_t> header,
                                 std::span<const std::uint8_t> payload, Completion* completion) {
  CallerLock lock(transport_.mutex());
  Status refused = unusableLocked();
  const std::uint64_t total = header.size() + payload.size();
  if (refused.isOk() && total > kMaxMessageBytes) {
    refused = resourceExhausted("a message of " + std::to_string(total) +
                                " bytes is over the socket transport's limit of " +
                                std::to_string(kMaxMessageBytes));
  }
  if (!refused.isOk()) {
    completion->onComplete(refused);
    return;
  }
  FrameHeader frame;
  frame.type = FrameType::kMessage;
  frame.sequence = ++sequence_;
  frame.aux = static_cast<std::uint32_t>(header.size());
  frame.length = total;
  pending_.push_back({FrameType::kMessage, frame.sequence, completion, nullptr, 0});
  stream_.queue(frame, header, payload);
  kickLocked(true);
}

void SocketEndpoint::kickLocked(bool fromPost) {
  if (state_ != State::kOpen || postFailure_) return;
  Status written = stream_.writeSome();
  if (!written.isOk()) {
    if (fromPost) {
      postFailure_ = written;
      transport_.attendLocked(id_);
    } else {
      failLocked(written);
    }
    return;
  }
  updateWatchLocked();
}

void SocketEndpoint::updateWatchLocked() {
  const bool want = state_ == State::kConnecting || stream_.hasOutput();
  if (want == watchingWrite_) return;
  transport_.watchLocked(id_, stream_.fd(), want);
  watchingWrite_ = want;
}

bool SocketEndpoint::onEventsLocked(std::uint32_t events) {
  if (state_ == State::kConnecting) {
    if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) == 0) return false;
    int error = 0;
    socklen_t length = sizeof(error);
    if (::getsockopt(stream_.fd(), SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
    if (error != 0) {
      connectErrors_ += " " + stream_.peer() + ": " + std::strerror(error) + ";";
      if (!tryNextAddressLocked()) {
        failLocked(peerFailed("cannot connect the socket data path to the peer:" + connectErrors_ +
                              loopbackHint(peer_)));
      }
      return true;
    }
    state_ = State::kOpen;
  }
  if (state_ != State::kOpen) return false;
  if (postFailure_) {
    failLocked(*postFailure_);
    return true;
  }
  if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0) {
    Result<bool> pumped = reader_.pump(stream_, *this, kReadBudgetBytes);
    if (!pumped.isOk()) {
      failLocked(pumped.status());
      return true;
    }
    moreInput_ = *pumped;
  }
  kickLocked(false);
  return true;
}

void SocketEndpoint::onTickLocked(Clock::time_point now) {
  if (state_ == State::kOpen && !welcomed_ && now >= connectDeadline_) {
    failLocked(peerFailed("the socket data path to " + stream_.peer() +
                          " connected but did not answer its hello within " +
                          std::to_string(transport_.connectTimeout().count()) + " ms"));
    return;
  }
  if (state_ == State::kConnecting && now >= connectDeadline_) {
    failLocked(peerFailed("the socket data path to " + stream_.peer() + " did not connect within " +
                          std::to_string(transport_.connectTimeout().count()) + " ms" +
                          (connectErrors_.empty() ? "" : " (" + connectErrors_ + " )") +
                          loopbackHint(peer_)));
  }
}

Result<BodySink> SocketEndpoint::onHeader(const FrameHeader& header) {
  if (header.type == FrameType::kError && header.sequence == 0) {
    return BodySink{nullptr, true, false};  // the peer refused the connection itself
  }
  if (!welcomed_) {
    if (header.type == FrameType::kWelcome && header.region == transport_.instance() &&
        header.key == peer_.instance) {
      return BodySink{nullptr, true, false};  // the peer's nonce
    }
    return protocolError("socket data path to " + stream_.peer() + ": a " +
                         std::string(toString(header.type)) +
                         " frame where the welcome to this endpoint's hello was due");
  }
  if (pending_.empty() || pending_.front().sequence != header.sequence) {
    return protocolError(
        "socket data path to " + stream_.peer() + ": a " + std::string(toString(header.type)) +
        " reply for request " + std::to_string(header.sequence) + " while " +
        (pending_.empty() ? std::string("none was waiting")
                          : "request " + std::to_string(pending_.front().sequence) + " was next"));
  }
  const Pending& next = pending_.front();
  switch (header.type) {
    case FrameType::kDone:
      if (next.type == FrameType::kGet) break;
      return BodySink{};
    case FrameType::kData:
      if (next.type != FrameType::kGet || header.length != next.length) break;
      if (next.device >= 0) return BodySink{nullptr, true, false};  // copied in by onFrame
      return BodySink{next.dest, false, false};
    case FrameType::kError: return BodySink{nullptr, true, false};
    default: break;
  }
  return protocolError("socket data path to " + stream_.peer() + ": a " +
                       std::string(toString(header.type)) + " reply of " +
                       std::to_string(header.length) + " bytes does not answer a " +
                       std::string(toString(next.type)) + " of " + std::to_string(next.length));
}

Status SocketEndpoint::onFrame(const FrameHeader& header, std::vector<std::uint8_t> body) {
  const std::string text =
      header.type == FrameType::kError ? std::string(body.begin(), body.end()) : std::string();
  if (header.type == FrameType::kError && header.sequence == 0) {
    return Status(static_cast<StatusCode>(header.aux),
                  "the socket data path to " + stream_.peer() + " was refused: " + text);
  }
  if (header.type == FrameType::kWelcome) return welcomedLocked(body);
  Pending done = pending_.front();
  pending_.pop_front();
  Status status;
  if (header.type == FrameType::kData && done.device >= 0) {
    status = transport_.deviceCopiesLocked().toDevice(done.dest, done.device, body);
    if (!status.isOk()) status = status.withContext("get from " + stream_.peer());
  }
  if (header.type == FrameType::kError) {
    status = Status(static_cast<StatusCode>(header.aux),
                    "the peer at " + stream_.peer() + " refused a " +
                        std::string(toString(done.type)) + ": " + text);
  }
  done.completion->onComplete(status);
  completeFlushesLocked();
  return Status::ok();
}

Status SocketEndpoint::welcomedLocked(std::span<const std::uint8_t> targetNonce) {
  ConnectionIdentity identity;
  identity.protection = protection_;
  identity.initiatorNonce = *nonce_;
  std::copy(targetNonce.begin(), targetNonce.end(), identity.targetNonce.begin());
  identity.initiatorInstance = transport_.instance();
  identity.targetInstance = peer_.instance;
  KVX_ASSIGN_OR_RETURN(ConnectionProtection protection,
                       protectConnection(peer_.dataKey, identity, ConnectionEnd::kInitiator));
  stream_.protect(std::move(protection.sending));
  reader_.protect(std::move(protection.receiving));
  welcomed_ = true;
  return Status::ok();
}

void SocketEndpoint::completeFlushesLocked() {
  while (!pending_.empty() && pending_.front().type == FrameType::kHello) {
    Completion* flushed = pending_.front().completion;
    pending_.pop_front();
    flushed->onComplete(Status::ok());
  }
}

void SocketEndpoint::failLocked(const Status& status) {
  if (state_ == State::kFailed || state_ == State::kClosed) return;
  state_ = State::kFailed;
  failed_.store(true, std::memory_order_release);
  failure_ = status;
  transport_.removeConnectionLocked(id_, stream_.fd());
  stream_.abort();
  std::deque<Pending> failed;
  failed.swap(pending_);
  for (const Pending& op : failed) op.completion->onComplete(status);
  transport_.deferErrorLocked(onError_, status);
}

void SocketEndpoint::closeLocked(bool reset) {
  const bool wasLive = state_ == State::kOpen || state_ == State::kConnecting;
  state_ = State::kClosed;
  if (!wasLive) return;
  transport_.removeConnectionLocked(id_, stream_.fd());
  if (reset || stream_.hasOutput()) {
    stream_.abort();
  } else {
    stream_.closeSocket();
  }
  std::deque<Pending> cancelledOps;
  cancelledOps.swap(pending_);
  for (const Pending& op : cancelledOps) {
    op.completion->onComplete(cancelled("the socket data path to " + stream_.peer() +
                                        " was closed with this operation in flight"));
  }
}

void SocketEndpoint::close(bool force) {
  CallerLock lock(transport_.mutex());
  if (state_ == State::kClosed) return;
  // A graceful close waits for the answers to what is in flight, driving the whole transport
  // (not only this socket) so that the other connections, and this transport's own inbound
  // side when the endpoint leads back to it, keep moving meanwhile.
  const auto deadline = Clock::now() + kGracefulCloseTimeout;
  while (!force && !pending_.empty() && (state_ == State::kOpen || state_ == State::kConnecting) &&
         Clock::now() < deadline) {
    if (transport_.progressLocked()) continue;
    lock.unlock();
    pollfd events{transport_.eventFd(), POLLIN, 0};
    (void)::poll(&events, 1, 10);
    lock.lock();
  }
  if (state_ != State::kClosed) closeLocked(force || !pending_.empty());
}

bool SocketEndpoint::failed() const { return failed_.load(std::memory_order_acquire); }

std::string SocketEndpoint::description() const {
  sync::MutexLock lock(descriptionMutex_);
  return description_;
}

}  // namespace kvx::engine::socket
