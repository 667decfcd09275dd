// ControlChannel::Impl, part four: a handshake between agents whose views of each other
// differ (messages/rejoin.h). Channel thread only.

#include <spdlog/spdlog.h>

#include <exception>
#include <utility>

#include "agent/channel/control_channel_impl.h"

namespace kvx::agent::channel {

bool ControlChannel::Impl::knows(const engine::PeerMetadata& remote, std::uint64_t except) const {
  if (!handlers_.holdsPeer) return false;
  bool linked = false;
  for (const auto& [id, link] : links_) {
    if (id != except && link.state == Link::State::kEstablished && link.peer == remote.name) {
      linked = true;
      break;
    }
  }
  // Held without a link (metadata loaded from a blob) is no session the peer could share.
  if (!linked) return false;
  try {
    return handlers_.holdsPeer(remote);
  } catch (const std::exception& e) {
    spdlog::error("{}: the holdsPeer handler threw: {}", logName_, e.what());
    return false;
  }
}

namespace {

Status startOver(const ChannelHandlers& handlers, const engine::PeerMetadata& remote,
                 const Status& why) {
  if (!handlers.onPeerStartedOver) return Status::ok();
  try {
    return handlers.onPeerStartedOver(remote, why);
  } catch (const std::exception& e) {
    return internalError(std::string("the onPeerStartedOver handler threw: ") + e.what());
  }
}

}  // namespace

void ControlChannel::Impl::onHelloAck(std::uint64_t id, Link& link, HelloAck ack) {
  if (ack.knewYou) {
    const std::string& peer = ack.metadata.name;
    const bool known = knows(ack.metadata, id);
    if (*ack.knewYou && !known) {
      // The server still holds a session with us that we dropped: it must forget it before
      // anything we send reaches it.
      spdlog::info("{}: {} still knew this agent, which had dropped it: asking it to start over",
                   logName_, link.describe());
      link.connection->send(encodeMessage(Rejoin{}));
      link.awaitingRejoinAck = std::move(ack);
      return;
    }
    if (!*ack.knewYou && known) {
      const Status why =
          peerFailed("peer '" + peer +
                     "' no longer knew this agent (it dropped its side of their session and "
                     "this agent connected again before seeing its link close)");
      spdlog::info("{}: {}; what this agent held for it ends", logName_, why.message());
      const Status done = startOver(handlers_, ack.metadata, why);
      if (!done.isOk()) {
        failLink(link, done);
        return;
      }
    }
  }
  finishConnect(link, std::move(ack));
}

void ControlChannel::Impl::onRejoinReply(Link& link, Message message) {
  if (std::holds_alternative<Heartbeat>(message)) return;
  if (auto* update = std::get_if<MetadataUpdate>(&message)) {
    if (Status named = checkUpdateName(link.awaitingRejoinAck->metadata.name, *update);
        !named.isOk()) {
      failLink(link, named);
      return;
    }
    link.awaitingRejoinAck->metadata = std::move(update->metadata);
    return;
  }
  if (!std::holds_alternative<RejoinAck>(message)) {
    failLink(link, protocolError("expected rejoin_ack or error in reply to rejoin, got " +
                                 std::string(toString(messageType(message)))));
    return;
  }
  HelloAck ack = std::move(*link.awaitingRejoinAck);
  link.awaitingRejoinAck.reset();
  finishConnect(link, std::move(ack));
}

void ControlChannel::Impl::onRejoin(Link& link) {
  if (!link.rejoinable) {
    failLink(link, protocolError("unexpected rejoin: it must be the first message after a "
                                 "hello_ack that knew the sender"));
    return;
  }
  const engine::PeerMetadata remote = std::move(*link.rejoinable);
  link.rejoinable.reset();
  const Status why = peerFailed(
      "peer '" + remote.name +
      "' connected again without the state of its session with this agent (it dropped its "
      "side, e.g. after its data path to this agent failed); what was in flight with it ends");
  spdlog::info("{}: {}", logName_, why.message());
  const Status done = startOver(handlers_, remote, why);
  if (!done.isOk()) {
    failLink(link, done);
    return;
  }
  link.connection->send(encodeMessage(RejoinAck{}));
}

void ControlChannel::Impl::finishConnect(Link& link, HelloAck ack) {
  std::string peer = ack.metadata.name;
  if (!link.slot->set(std::move(ack.metadata))) {
    // The connect() caller already gave up (deadline or stop): nobody owns this link.
    sayGoodbye(link, "connect abandoned", cancelled("connect abandoned"),
               std::chrono::milliseconds(0));
    return;
  }
  link.slot.reset();
  establish(link, std::move(peer), ack.peerTimeoutMs);
  spdlog::info("{}: handshake done with {}", logName_, link.describe());
}

}  // namespace kvx::agent::channel
