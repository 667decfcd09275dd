// ControlChannel::Impl, part two: what happens on a link once it has a TCP connection (the
// handshake in both directions, messages after it, closing). Channel thread only.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "agent/channel/control_channel_impl.h"
#include "agent/metadata/metadata_codec.h"
#include "json/json_reader.h"

namespace kvx::agent::channel {

using boost::asio::ip::tcp;

void ControlChannel::Impl::addLink(tcp::socket socket, bool inbound, Deadline handshakeDeadline,
                                   std::shared_ptr<MetadataSlot> slot,
                                   std::vector<std::uint8_t> hello) {
  const std::uint64_t id = nextId_++;
  boost::system::error_code ignored;
  const tcp::endpoint remote = socket.remote_endpoint(ignored);
  auto connection = std::make_shared<ControlConnection>(
      makeByteStream(std::move(socket), tls_, /*server=*/inbound), options_.maxFrameBytes,
      options_.readTimeout, options_.readTimeout);
  Link& link = links_[id];
  link.connection = connection;
  link.inbound = inbound;
  if (inbound && !ignored) link.remoteIp = remote.address().to_string();
  link.slot = std::move(slot);
  spdlog::info("{}: {} {}", logName_, inbound ? "connection from" : "connected to",
               connection->remoteAddress());
  connection->start(
      ControlConnection::Callbacks{[this, id](Frame frame) { onFrame(id, std::move(frame)); },
                                   [this, id](const Status& why) {
                                     auto it = links_.find(id);
                                     if (it != links_.end()) failLink(it->second, why);
                                   },
                                   [this, id](const Status& why) { onClosed(id, why); }});
  connection->setReadDeadline(handshakeDeadline);
  if (!options_.authToken.empty()) {
    connection->setMaxFrameBytes(std::min(options_.maxFrameBytes, kMaxUnauthenticatedFrameBytes));
    link.hello = std::move(hello);
    beginAuth(link);
  } else if (!inbound) {
    connection->send(std::move(hello));
  }
}

void ControlChannel::Impl::onFrame(std::uint64_t id, Frame frame) {
  auto it = links_.find(id);
  if (it == links_.end() || it->second.state == Link::State::kClosing) return;
  Link& link = it->second;
  Result<Message> decoded = decodeMessage(frame);
  if (!decoded.isOk()) {
    failLink(link, decoded.status());
    return;
  }
  Message message = std::move(decoded).value();
  if (link.state == Link::State::kEstablished) {
    onEstablishedMessage(id, link, std::move(message));
    return;
  }
  if (auto* error = std::get_if<ErrorMessage>(&message)) {
    onHandshakeError(link, *error);
    return;
  }
  if (link.auth != Link::Auth::kDone) {
    onAuthMessage(link, std::move(message));
    return;
  }
  const std::string got(toString(messageType(message)));
  if (link.inbound) {
    if (auto* hello = std::get_if<Hello>(&message)) {
      onHello(id, link, std::move(*hello));
    } else if (std::holds_alternative<AuthBegin>(message)) {
      failLink(link, unauthenticated("peer at " + link.connection->remoteAddress() +
                                     " wants to authenticate, but this agent has no auth token; "
                                     "configure the same token (KVX_AUTH_TOKEN or a token file) "
                                     "on both agents"));
    } else {
      failLink(link, protocolError("expected hello as the first message, got " + got));
    }
    return;
  }
  if (link.awaitingRejoinAck) {
    onRejoinReply(link, std::move(message));
  } else if (auto* ack = std::get_if<HelloAck>(&message)) {
    onHelloAck(id, link, std::move(*ack));
  } else {
    failLink(link, protocolError("expected hello_ack or error in reply to hello, got " + got));
  }
}

void ControlChannel::Impl::onHello(std::uint64_t id, Link& link, Hello hello) {
  // Asked before onHello adds the client: whether it was known already.
  const bool knewYou = knows(hello.metadata, id);
  Result<engine::PeerMetadata> local =
      failedPrecondition("this agent does not accept control connections");
  if (handlers_.onHello) {
    try {
      local = handlers_.onHello(hello.metadata);
    } catch (const std::exception& e) {
      local = internalError(std::string("the onHello handler threw: ") + e.what());
    }
  }
  if (!local.isOk()) {
    failLink(link, local.status());
    return;
  }
  const Status valid = metadata::validateMetadata(*local, "local metadata");
  if (!valid.isOk()) {
    failLink(link, internalError("onHello returned invalid metadata: " + valid.message()));
    return;
  }
  std::vector<std::uint8_t> ack = encodeMessage(HelloAck{
      std::move(*local), static_cast<std::uint64_t>(options_.peerTimeout.count()), knewYou});
  if (ack.size() - kFrameHeaderBytes > options_.maxFrameBytes) {
    failLink(link, resourceExhausted("hello_ack of " + std::to_string(ack.size()) +
                                     " bytes exceeds the frame limit"));
    return;
  }
  link.connection->send(std::move(ack));
  if (knewYou) link.rejoinable = hello.metadata;
  establish(link, hello.metadata.name, hello.peerTimeoutMs);
  spdlog::info("{}: accepted {}{}", logName_, link.describe(),
               hello.role ? " (role " + *hello.role + ")" : std::string());
}

void ControlChannel::Impl::establish(Link& link, std::string peer,
                                     std::optional<std::uint64_t> peerTimeoutMs) {
  link.state = Link::State::kEstablished;
  link.establishedAt = Clock::now();
  link.notifyOnClose = true;
  link.peer = std::move(peer);
  link.connection->setReadDeadline(std::nullopt);
  if (!peerTimeoutMs) {
    spdlog::info(
        "{}: {} announced no peer timeout (a kvx without heartbeats): it is not sent "
        "heartbeats, and its failure shows only when its connection closes",
        logName_, link.describe());
    return;
  }
  // Twice per the peer's timeout at least, so that one late heartbeat is not its verdict;
  // never more often than every kMinPeerTimeoutMs / 2, whatever the peer asks.
  const std::chrono::milliseconds theirs(*peerTimeoutMs / 2);
  ControlConnection::Liveness liveness;
  liveness.sendEvery = std::max(std::min(options_.heartbeatInterval, theirs),
                                std::chrono::milliseconds(kMinPeerTimeoutMs / 2));
  liveness.heartbeat = encodeMessage(Heartbeat{});
  liveness.timeout = options_.peerTimeout;
  liveness.peerName = link.peer;
  link.connection->startLiveness(std::move(liveness));
}

void ControlChannel::Impl::onEstablishedMessage(std::uint64_t /*id*/, Link& link, Message message) {
  if (std::holds_alternative<Rejoin>(message)) return onRejoin(link);
  link.rejoinable.reset();                                 // a Rejoin comes first or not at all
  if (std::holds_alternative<Heartbeat>(message)) return;  // the connection noted the bytes
  if (auto* update = std::get_if<MetadataUpdate>(&message)) {
    if (Status named = checkUpdateName(link.peer, *update); !named.isOk()) {
      failLink(link, named);
      return;
    }
    if (!handlers_.onMetadataUpdate) return;
    try {
      handlers_.onMetadataUpdate(update->metadata);
    } catch (const std::exception& e) {
      spdlog::error("{}: the onMetadataUpdate handler threw: {}", logName_, e.what());
    }
  } else if (auto* goodbye = std::get_if<Goodbye>(&message)) {
    spdlog::info("{}: {} said goodbye: {}", logName_, link.describe(),
                 jsonio::quoteForError(goodbye->reason, 200));
    link.state = Link::State::kClosing;
    link.connection->close(cancelled("peer '" + link.peer + "' said goodbye: " + goodbye->reason));
  } else if (auto* error = std::get_if<ErrorMessage>(&message)) {
    const Status why = error->toStatus("peer '" + link.peer + "' reported an error");
    spdlog::warn("{}: {}", logName_, why.toString());
    link.state = Link::State::kClosing;
    link.connection->close(why);
  } else {
    failLink(link, protocolError("unexpected " + std::string(toString(messageType(message))) +
                                 " after the handshake"));
  }
}

void ControlChannel::Impl::failLink(Link& link, const Status& why) {
  if (link.state == Link::State::kClosing) return;
  spdlog::warn("{}: closing the connection to {}: {}", logName_, link.describe(), why.toString());
  if (link.slot) link.slot->set(why.withContext("connect to " + link.connection->remoteAddress()));
  link.state = Link::State::kClosing;
  link.connection->send(encodeMessage(ErrorMessage::fromStatus(why)));
  link.connection->closeAfterFlush(
      why, std::min<std::chrono::milliseconds>(options_.readTimeout, std::chrono::seconds(1)));
}

void ControlChannel::Impl::sayGoodbye(Link& link, const std::string& reason, Status why,
                                      std::chrono::milliseconds linger) {
  if (link.state == Link::State::kClosing) return;
  link.state = Link::State::kClosing;
  link.connection->send(encodeMessage(Goodbye{reason}));
  link.connection->closeAfterFlush(std::move(why), linger);
}

void ControlChannel::Impl::onClosed(std::uint64_t id, const Status& why) {
  auto it = links_.find(id);
  if (it == links_.end()) return;
  Link link = std::move(it->second);
  links_.erase(it);
  if (link.refused) {  // refuse() logged it
    maybeFinishStop();
    return;
  }
  if (link.slot) {
    link.slot->set(why.withContext("connect to " + link.connection->remoteAddress() +
                                   ": the connection closed during the handshake"));
  }
  if (why.code() == StatusCode::kUnauthenticated && link.state == Link::State::kHandshake) {
    // A TLS handshake that failed: the link closed without a word from either side.
    spdlog::warn("{}: disconnected from {}: {}", logName_, link.describe(), why.toString());
  } else {
    spdlog::info("{}: disconnected from {}: {}", logName_, link.describe(), why.toString());
  }
  // Two agents may hold two links (one each way), and a restarted agent's new link may come
  // up before its old one is seen to fail: the peer is gone only when its last link is.
  const bool lastLink = std::none_of(links_.begin(), links_.end(), [&](const auto& entry) {
    return entry.second.notifyOnClose && entry.second.peer == link.peer;
  });
  if (link.notifyOnClose && lastLink && !stopping_ && handlers_.onPeerDisconnected) {
    try {
      handlers_.onPeerDisconnected(link.peer, why);
    } catch (const std::exception& e) {
      spdlog::error("{}: the onPeerDisconnected handler threw: {}", logName_, e.what());
    }
  }
  maybeFinishStop();
}

void ControlChannel::Impl::broadcast(const std::vector<std::uint8_t>& update) {
  for (auto& [id, link] : links_) {
    if (link.state == Link::State::kEstablished) link.connection->send(update);
  }
}

Status ControlChannel::Impl::checkUpdateName(const std::string& handshakeName,
                                             const MetadataUpdate& update) {
  if (update.metadata.name == handshakeName) return Status::ok();
  return jsonio::fieldError(
      "metadata_update.metadata.name",
      "the name given at the handshake " + jsonio::quoteForError(handshakeName),
      jsonio::quoteForError(update.metadata.name));
}

Status ControlChannel::Impl::disconnectPeer(const std::string& peer, Clock::time_point before) {
  int found = 0;
  for (auto& [id, link] : links_) {
    if (link.state != Link::State::kEstablished || link.peer != peer) continue;
    if (link.establishedAt >= before) continue;
    ++found;
    sayGoodbye(link, "disconnected", cancelled("disconnected from '" + peer + "' locally"),
               std::min<std::chrono::milliseconds>(options_.readTimeout, std::chrono::seconds(1)));
  }
  if (found == 0) {
    return notFound(
        "no connected peer named " + jsonio::quoteForError(peer) +
        (before == Clock::time_point::max() ? "" : " with a link older than the one asked for"));
  }
  return Status::ok();
}

Result<Clock::time_point> ControlChannel::Impl::lastHeardFromPeer(const std::string& peer) const {
  std::optional<Clock::time_point> latest;
  for (const auto& [id, link] : links_) {
    if (link.state != Link::State::kEstablished || link.peer != peer) continue;
    const Clock::time_point heard = link.connection->lastReceived();
    if (!latest || heard > *latest) latest = heard;
  }
  if (!latest) return notFound("no connected peer named " + jsonio::quoteForError(peer));
  return *latest;
}

}  // namespace kvx::agent::channel
