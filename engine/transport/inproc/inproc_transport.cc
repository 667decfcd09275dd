#include "engine/transport/inproc/inproc_transport.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>

#include "engine/transport/inproc/inproc_endpoint.h"
#include "engine/transport/inproc/inproc_fabric.h"
#include "engine/transport/inproc/inproc_memory.h"
#include "engine/transport/inproc/inproc_transport_factory.h"

namespace kvx::engine::inproc {

InprocTransport::InprocTransport(const TransportOptions& options) : agentName_(options.agentName) {
  eventFd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  fabricId_ = InprocFabric::instance().attach(this);
}

InprocTransport::~InprocTransport() {
  InprocFabric::instance().detach(fabricId_);
  if (eventFd_ >= 0) ::close(eventFd_);
}

std::vector<std::uint8_t> InprocTransport::localAddress() const {
  std::vector<std::uint8_t> address(sizeof(fabricId_));
  std::memcpy(address.data(), &fabricId_, sizeof(fabricId_));
  return address;
}

Result<std::unique_ptr<TransportMemory>> InprocTransport::registerMemory(void* address,
                                                                         std::uint64_t length,
                                                                         MemoryKind kind,
                                                                         int /*device*/) {
  if (address == nullptr || length == 0) {
    return invalidArgument("cannot register " + std::to_string(length) + " bytes at " +
                           (address ? "a valid address" : "a null address"));
  }
  if (!supportsMemoryKind(kind)) {
    return unimplemented("the inproc transport moves host memory only, not " +
                         std::string(toString(kind)));
  }
  return std::unique_ptr<TransportMemory>(
      new InprocMemory(fabricId_, address, length, kind, nullptr));
}

Result<std::unique_ptr<TransportMemory>> InprocTransport::allocateMemory(std::uint64_t length,
                                                                         MemoryKind kind,
                                                                         int /*device*/) {
  if (length == 0) return invalidArgument("cannot allocate 0 bytes");
  if (!supportsMemoryKind(kind)) {
    return unimplemented("the inproc transport allocates host memory only");
  }
  std::unique_ptr<std::uint8_t[]> buffer(new (std::nothrow) std::uint8_t[length]());
  if (!buffer) return resourceExhausted("cannot allocate " + std::to_string(length) + " bytes");
  void* address = buffer.get();
  return std::unique_ptr<TransportMemory>(
      new InprocMemory(fabricId_, address, length, kind, std::move(buffer)));
}

Result<std::shared_ptr<Endpoint>> InprocTransport::connect(std::span<const std::uint8_t> peer,
                                                           EndpointErrorHandler onError) {
  if (peer.size() != sizeof(std::uint64_t)) {
    return invalidArgument("inproc address must be 8 bytes, got " + std::to_string(peer.size()));
  }
  std::uint64_t target = 0;
  std::memcpy(&target, peer.data(), sizeof(target));
  if (!InprocFabric::instance().withTransport(target, [](InprocTransport&) {})) {
    return peerFailed("no inproc transport with id " + std::to_string(target));
  }
  InprocFabric::instance().admit(fabricId_, target);  // a new link: its writes land again
  auto endpoint = std::make_shared<InprocEndpoint>(*this, target, std::move(onError));
  sync::MutexLock lock(mutex_);
  endpoints_.push_back(endpoint);
  return std::shared_ptr<Endpoint>(endpoint);
}

void InprocTransport::dropPeer(std::span<const std::uint8_t> peerAddress) {
  if (peerAddress.size() != sizeof(std::uint64_t)) return;
  std::uint64_t writer = 0;
  std::memcpy(&writer, peerAddress.data(), sizeof(writer));
  InprocFabric::instance().refuse(fabricId_, writer);
}

void InprocTransport::setMessageHandler(MessageHandler handler) {
  sync::MutexLock lock(mutex_);
  handler_ = std::move(handler);
}

void InprocTransport::queueCompletion(const InprocEndpoint* source, Completion* completion,
                                      Status status) {
  {
    sync::MutexLock lock(mutex_);
    completions_.push_back(PendingCompletion{source, completion, std::move(status)});
  }
  wake();
}

void InprocTransport::deliverMessage(std::vector<std::uint8_t> header,
                                     std::vector<std::uint8_t> payload) {
  {
    sync::MutexLock lock(mutex_);
    inbox_.push_back(Message{std::move(header), std::move(payload)});
  }
  wake();
}

void InprocTransport::drainCompletions(const InprocEndpoint* source) {
  sync::MutexLock progressLock(progressMutex_);
  std::deque<PendingCompletion> mine;
  {
    sync::MutexLock lock(mutex_);
    for (auto it = completions_.begin(); it != completions_.end();) {
      if (it->source == source) {
        mine.push_back(std::move(*it));
        it = completions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (PendingCompletion& c : mine) c.completion->onComplete(std::move(c.status));
}

bool InprocTransport::checkPeers() {
  std::vector<std::shared_ptr<InprocEndpoint>> live;
  {
    sync::MutexLock lock(mutex_);
    std::erase_if(endpoints_, [](const std::weak_ptr<InprocEndpoint>& e) { return e.expired(); });
    for (auto& weak : endpoints_) {
      if (auto e = weak.lock()) live.push_back(std::move(e));
    }
  }
  bool any = false;
  for (auto& e : live) any = e->detectPeerLoss() || any;
  return any;
}

bool InprocTransport::progress() {
  // Peer losses are found after the progress lock is released: their error handlers may
  // close endpoints, which drains completions under that lock.
  const bool active = deliver();
  const bool lost = checkPeers();
  return lost || active;
}

bool InprocTransport::deliver() {
  sync::MutexLock progressLock(progressMutex_);
  std::uint64_t drained = 0;
  [[maybe_unused]] ssize_t n = ::read(eventFd_, &drained, sizeof(drained));

  std::deque<PendingCompletion> completions;
  std::deque<Message> messages;
  MessageHandler handler;
  {
    sync::MutexLock lock(mutex_);
    completions.swap(completions_);
    messages.swap(inbox_);
    handler = handler_;
  }
  for (PendingCompletion& c : completions) c.completion->onComplete(std::move(c.status));
  for (Message& m : messages) {
    if (handler) handler(m.header, m.payload);
  }
  return !completions.empty() || !messages.empty();
}

bool InprocTransport::arm() {
  sync::MutexLock lock(mutex_);
  return completions_.empty() && inbox_.empty();
}

void InprocTransport::wake() {
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(eventFd_, &one, sizeof(one));
}

Result<std::unique_ptr<Transport>> createInprocTransport(const TransportOptions& options) {
  auto transport = std::make_unique<InprocTransport>(options);
  if (transport->eventFd() < 0) {
    return internalError(std::string("eventfd failed: ") + std::strerror(errno));
  }
  return std::unique_ptr<Transport>(std::move(transport));
}

}  // namespace kvx::engine::inproc
