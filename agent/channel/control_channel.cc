#include "agent/channel/control_channel.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <utility>

#include "agent/channel/asio_status.h"
#include "agent/channel/auth_token.h"
#include "agent/channel/control_channel_impl.h"
#include "agent/channel/host_port.h"
#include "agent/metadata/metadata_codec.h"

namespace kvx::agent::channel {
namespace {

constexpr std::uint32_t kMinFrameBytes = 4096;
constexpr std::chrono::milliseconds kMinHeartbeatInterval{10};
// How long stop() lets Goodbyes flush before it closes what is left.
constexpr std::chrono::milliseconds kStopGrace{250};
// Slack for a caller waiting on the channel thread beyond the operation's own deadline (the
// channel thread enforces that deadline; this only matters if a handler hogs the thread).
constexpr std::chrono::milliseconds kReplySlack{1000};

using boost::asio::ip::tcp;

Deadline withSlack(Deadline deadline) {
  return deadline > Deadline::max() - kReplySlack ? Deadline::max() : deadline + kReplySlack;
}

// Checks metadata we are about to send; a violation is the caller's mistake.
Result<std::vector<std::uint8_t>> encodeLocal(const Message& message,
                                              const engine::PeerMetadata& local,
                                              std::uint32_t maxFrameBytes) {
  const Status valid = metadata::validateMetadata(local, "local metadata");
  if (!valid.isOk()) return invalidArgument(valid.message());
  std::vector<std::uint8_t> bytes = encodeMessage(message);
  if (bytes.size() - kFrameHeaderBytes > maxFrameBytes) {
    return resourceExhausted(std::string(toString(messageType(message))) + " of " +
                             std::to_string(bytes.size() - kFrameHeaderBytes) +
                             " bytes exceeds the " + std::to_string(maxFrameBytes) +
                             "-byte frame limit");
  }
  return bytes;
}

}  // namespace

ControlChannel::Impl::Impl(ChannelOptions options, ChannelHandlers handlers)
    : options_(std::move(options)), handlers_(std::move(handlers)) {}

Status ControlChannel::Impl::listen() {
  logName_ = "control channel (connect-only)";
  if (options_.listenAddress.empty()) return Status::ok();
  KVX_ASSIGN_OR_RETURN(tcp::endpoint endpoint, parseHostPort(options_.listenAddress));
  const std::string what = "cannot listen on " + options_.listenAddress;
  boost::system::error_code error;
  acceptor_.open(endpoint.protocol(), error);
  if (!error) acceptor_.set_option(tcp::acceptor::reuse_address(true), error);
  if (!error) acceptor_.bind(endpoint, error);
  if (!error) acceptor_.listen(boost::asio::socket_base::max_listen_connections, error);
  if (error) {
    const StatusCode code = error == boost::asio::error::address_in_use
                                ? StatusCode::kAlreadyExists
                                : StatusCode::kFailedPrecondition;
    return asioStatus(code, what, error);
  }
  const tcp::endpoint bound = acceptor_.local_endpoint(error);
  if (error) return asioStatus(StatusCode::kInternal, what, error);
  listenAddress_ = formatHostPort(bound);
  logName_ = "control channel " + listenAddress_;
  return Status::ok();
}

void ControlChannel::Impl::logStart() const {
  if (tls_) {
    spdlog::info(
        "{}: started; TLS with mutual certificate authentication (peers' certificates must "
        "chain to '{}'; no host name check){}",
        logName_, options_.tls.caFile,
        options_.authToken.empty() ? "" : ", and peers must also prove the shared token");
    return;
  }
  if (!options_.authToken.empty()) {
    spdlog::info("{}: started; peers must authenticate with the shared token", logName_);
    return;
  }
  // listenAddress_ is immutable after start, unlike the acceptor (channel thread only).
  auto bound = parseHostPort(listenAddress_);
  if (listenAddress_.empty() || !bound.isOk()) {
    spdlog::info("{}: started; unauthenticated (no auth token)", logName_);
  } else if (bound->address().is_loopback()) {
    spdlog::info(
        "{}: started; the control channel is unauthenticated and listens on loopback only "
        "(set {} or a token file to authenticate peers and listen on other addresses)",
        logName_, kAuthTokenVariable);
  } else {
    spdlog::warn(
        "{}: started UNAUTHENTICATED on a non-loopback address (allowUnauthenticated): any "
        "host that reaches it can join and read this agent's metadata; set {} or a token file",
        logName_, kAuthTokenVariable);
  }
}

void ControlChannel::Impl::run() {
  { sync::MutexLock lock(mutex_); }  // start() publishes threadId_ under this lock
  for (;;) {
    try {
      io_.run();
      return;
    } catch (const std::exception& e) {
      spdlog::error("{}: unexpected exception on the channel thread: {}", logName_, e.what());
    }
  }
}

void ControlChannel::Impl::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& error, tcp::socket socket) {
    if (stopping_ || error == boost::asio::error::operation_aborted) return;
    if (error) {
      // Typically out of file descriptors: back off instead of spinning.
      spdlog::warn("{}: accept failed: {}", logName_, error.message());
      acceptRetry_.expires_after(std::chrono::milliseconds(100));
      acceptRetry_.async_wait([this](const boost::system::error_code& timerError) {
        if (!timerError && !stopping_) accept();
      });
      return;
    }
    boost::system::error_code ignored;
    const tcp::endpoint remote = socket.remote_endpoint(ignored);
    const Status admitted = admit(ignored ? std::string() : remote.address().to_string());
    if (!admitted.isOk()) {
      refuse(std::move(socket), admitted);
    } else {
      noteAdmitted();
      addLink(std::move(socket), /*inbound=*/true, Clock::now() + options_.readTimeout, nullptr,
              {});
    }
    accept();
  });
}

void ControlChannel::Impl::startConnect(tcp::endpoint endpoint, std::vector<std::uint8_t> hello,
                                        Deadline deadline, std::shared_ptr<MetadataSlot> slot) {
  const std::string address = formatHostPort(endpoint);
  if (stopping_) {
    slot->set(cancelled("connect to " + address + ": the control channel is stopping"));
    return;
  }
  const std::uint64_t id = nextId_++;
  Attempt& attempt = attempts_[id];
  attempt.socket = std::make_shared<tcp::socket>(io_);
  attempt.timer = std::make_shared<boost::asio::steady_timer>(io_);
  attempt.slot = slot;
  const auto budget =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  attempt.timer->expires_at(deadline);
  attempt.timer->async_wait([this, id, address, budget](const boost::system::error_code& error) {
    auto it = attempts_.find(id);
    if (error || it == attempts_.end()) return;
    it->second.slot->set(timedOut("connect to " + address + " did not complete within " +
                                  std::to_string(budget) + " ms"));
    boost::system::error_code ignored;
    it->second.socket->close(ignored);
  });
  attempt.socket->async_connect(endpoint, [this, id, address, deadline, hello = std::move(hello)](
                                              const boost::system::error_code& error) mutable {
    auto it = attempts_.find(id);
    if (it == attempts_.end()) return;
    Attempt done = std::move(it->second);
    attempts_.erase(it);
    done.timer->cancel();
    if (!done.slot->isSet()) {
      if (error) {
        done.slot->set(asioStatus(StatusCode::kPeerFailed, "connect to " + address, error));
      } else {
        addLink(std::move(*done.socket), /*inbound=*/false, deadline, done.slot, std::move(hello));
      }
    }
    maybeFinishStop();
  });
}

void ControlChannel::Impl::beginStop() {
  stopping_ = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  acceptRetry_.cancel();
  const Status why = cancelled("the control channel is stopping");
  for (auto& [id, attempt] : attempts_) {
    attempt.slot->set(why);
    attempt.socket->close(ignored);
    attempt.timer->cancel();
  }
  for (auto& [id, link] : links_) {
    if (link.slot) link.slot->set(why);
    if (link.state == Link::State::kEstablished) {
      sayGoodbye(link, "agent stopping", why, std::chrono::milliseconds(0));
    } else {
      link.connection->close(why);
    }
  }
  work_.reset();
  stopTimer_.expires_after(kStopGrace);
  stopTimer_.async_wait([this, why](const boost::system::error_code& error) {
    if (error) return;
    for (auto& [id, link] : links_) link.connection->close(why);
    io_.stop();
  });
  maybeFinishStop();
}

void ControlChannel::Impl::maybeFinishStop() {
  if (stopping_ && links_.empty() && attempts_.empty()) stopTimer_.cancel();
}

// ---- public API ----

ControlChannel::ControlChannel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ControlChannel::~ControlChannel() { stop(); }

Status validateChannelOptions(const ChannelOptions& options) {
  if (options.connectTimeout.count() <= 0 || options.readTimeout.count() <= 0) {
    return invalidArgument("control channel timeouts must be positive (connectTimeout " +
                           std::to_string(options.connectTimeout.count()) + " ms, readTimeout " +
                           std::to_string(options.readTimeout.count()) + " ms)");
  }
  if (options.maxFrameBytes < kMinFrameBytes) {
    return invalidArgument("maxFrameBytes " + std::to_string(options.maxFrameBytes) +
                           " is below the minimum of " + std::to_string(kMinFrameBytes));
  }
  if (options.maxConnectionsPerAddress == 0 || options.maxPendingHandshakes == 0) {
    return invalidArgument("maxConnectionsPerAddress (" +
                           std::to_string(options.maxConnectionsPerAddress) +
                           ") and maxPendingHandshakes (" +
                           std::to_string(options.maxPendingHandshakes) + ") must be at least 1");
  }
  if (options.maxPendingHandshakesPerAddress == 0) {
    return invalidArgument("maxPendingHandshakesPerAddress (0) must be at least 1");
  }
  if (!options.authToken.empty() && options.authToken.size() < kMinAuthTokenBytes) {
    return invalidArgument("the auth token has " + std::to_string(options.authToken.size()) +
                           " bytes; at least " + std::to_string(kMinAuthTokenBytes) +
                           " are needed (e.g. `openssl rand -hex 32`)");
  }
  KVX_RETURN_IF_ERROR(validateTlsConfig(options.tls));
  // TLS with client certificates authenticates peers as well as a token does.
  if (options.authToken.empty() && !options.tls.enabled && !options.allowUnauthenticated &&
      !options.listenAddress.empty()) {
    auto endpoint = parseHostPort(options.listenAddress);
    if (endpoint.isOk() && !endpoint->address().is_loopback()) {
      return invalidArgument(
          "listen address " + options.listenAddress +
          " is not a loopback address and neither an auth token nor TLS is set: any host "
          "that reaches it could join and read this agent's metadata. Set " +
          std::string(kAuthTokenVariable) +
          " or a token file (the same secret on every agent), or TLS certificates (kvx agent "
          "--tls-cert, --tls-key, --tls-ca), listen on 127.0.0.1, or allow an "
          "unauthenticated channel explicitly (allowUnauthenticated, kvx agent --insecure)");
    }
  }
  const auto interval = options.heartbeatInterval.count();
  const auto timeout = options.peerTimeout.count();
  if (interval < kMinHeartbeatInterval.count() || interval >= timeout ||
      static_cast<std::uint64_t>(timeout) > kMaxPeerTimeoutMs) {
    return invalidArgument(
        "heartbeatInterval " + std::to_string(interval) + " ms and peerTimeout " +
        std::to_string(timeout) + " ms: need " + std::to_string(kMinHeartbeatInterval.count()) +
        " ms <= heartbeatInterval < peerTimeout <= " + std::to_string(kMaxPeerTimeoutMs) +
        " ms (a peer is declared failed after peerTimeout without a frame from it, so it must "
        "hear from us more often than that; e.g. 500 ms and 2000 ms)");
  }
  return Status::ok();
}

Result<std::unique_ptr<ControlChannel>> ControlChannel::start(ChannelOptions options,
                                                              ChannelHandlers handlers) {
  KVX_RETURN_IF_ERROR(validateChannelOptions(options));
  std::shared_ptr<boost::asio::ssl::context> tls;
  if (options.tls.enabled) {
    KVX_ASSIGN_OR_RETURN(tls, makeTlsContext(options.tls));
  }
  auto impl = std::make_unique<Impl>(std::move(options), std::move(handlers));
  impl->tls_ = std::move(tls);
  KVX_RETURN_IF_ERROR(impl->listen());
  if (impl->acceptor_.is_open()) impl->accept();
  impl->work_.emplace(boost::asio::make_work_guard(impl->io_));
  {
    sync::MutexLock lock(impl->mutex_);
    impl->thread_ = std::thread([raw = impl.get()] { raw->run(); });
    impl->threadId_ = impl->thread_.get_id();
  }
  impl->logStart();
  return std::unique_ptr<ControlChannel>(new ControlChannel(std::move(impl)));
}

std::string ControlChannel::listenAddress() const { return impl_->listenAddress_; }

Result<engine::PeerMetadata> ControlChannel::connect(const std::string& hostPort,
                                                     const engine::PeerMetadata& local,
                                                     Deadline deadline) {
  if (impl_->onChannelThread()) {
    return failedPrecondition(
        "ControlChannel::connect called from a channel handler; it "
        "would wait on its own thread");
  }
  KVX_ASSIGN_OR_RETURN(tcp::endpoint endpoint, parseHostPort(hostPort));
  if (endpoint.port() == 0) return invalidArgument("connect to '" + hostPort + "': port 0");
  KVX_ASSIGN_OR_RETURN(
      std::vector<std::uint8_t> hello,
      encodeLocal(Hello{local, std::nullopt,
                        static_cast<std::uint64_t>(impl_->options_.peerTimeout.count())},
                  local, impl_->options_.maxFrameBytes));
  if (Clock::now() >= deadline) {
    return timedOut("connect to " + hostPort + ": the deadline had already passed");
  }
  auto slot = std::make_shared<Impl::MetadataSlot>();
  const bool posted = impl_->post(
      [impl = impl_.get(), endpoint, hello = std::move(hello), deadline, slot]() mutable {
        impl->startConnect(endpoint, std::move(hello), deadline, slot);
      });
  if (!posted) return failedPrecondition("connect to " + hostPort + ": the channel is stopped");
  slot->waitUntil(withSlack(deadline));
  // Claim the slot if the channel thread has not: then a late HelloAck is discarded there.
  slot->set(timedOut("connect to " + hostPort + ": no answer from the channel thread"));
  return *slot->waitUntil(Clock::now());
}

Result<engine::PeerMetadata> ControlChannel::connect(const std::string& hostPort,
                                                     const engine::PeerMetadata& local) {
  return connect(hostPort, local, deadlineIn(impl_->options_.connectTimeout));
}

Status ControlChannel::broadcastMetadata(const engine::PeerMetadata& local) {
  KVX_ASSIGN_OR_RETURN(std::vector<std::uint8_t> update,
                       encodeLocal(MetadataUpdate{local}, local, impl_->options_.maxFrameBytes));
  const bool posted =
      impl_->post([impl = impl_.get(), update = std::move(update)] { impl->broadcast(update); });
  if (!posted) return failedPrecondition("broadcastMetadata: the channel is stopped");
  return Status::ok();
}

template <typename T>
Result<T> ControlChannel::Impl::callOnChannelThread(const std::function<Result<T>()>& work,
                                                    const std::string& what) {
  if (onChannelThread()) {
    if (stopping_) return failedPrecondition(what + ": the channel is stopping");
    return work();
  }
  auto slot = std::make_shared<ResultSlot<T>>();
  const bool posted = post([work, slot] { slot->set(work()); });
  if (!posted) return failedPrecondition(what + ": the channel is stopped");
  slot->waitUntil(withSlack(deadlineIn(options_.readTimeout)));
  slot->set(timedOut(what + ": no answer from the channel thread"));
  return *slot->waitUntil(Clock::now());
}

Status ControlChannel::disconnect(const std::string& peer) {
  return disconnectOlderThan(peer, Clock::time_point::max());
}

Status ControlChannel::disconnectOlderThan(const std::string& peer, Clock::time_point before) {
  return impl_
      ->callOnChannelThread<std::monostate>(
          [impl = impl_.get(), peer, before]() -> Result<std::monostate> {
            const Status status = impl->disconnectPeer(peer, before);
            if (!status.isOk()) return status;
            return std::monostate{};
          },
          "disconnect '" + peer + "'")
      .status();
}

Result<Clock::time_point> ControlChannel::lastHeardFrom(const std::string& peer) {
  return impl_->callOnChannelThread<Clock::time_point>(
      [impl = impl_.get(), peer] { return impl->lastHeardFromPeer(peer); },
      "last heard from '" + peer + "'");
}

void ControlChannel::stop() {
  Impl& impl = *impl_;
  {
    sync::MutexLock lock(impl.mutex_);
    if (!impl.stopped_) {
      impl.stopped_ = true;
      boost::asio::post(impl.io_, [raw = &impl] { raw->beginStop(); });
    }
  }
  if (impl.onChannelThread()) return;
  sync::MutexLock stopLock(impl.stopMutex_);
  if (impl.thread_.joinable()) {
    impl.thread_.join();
    spdlog::info("{}: stopped", impl.logName_);
  }
}

}  // namespace kvx::agent::channel
