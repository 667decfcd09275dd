// ControlChannel::Impl, part four: admission of inbound connections (the per-address and
// handshake limits of ChannelOptions). Channel thread only.
//
// Handshakes are capped per remote address as well as in all: silent connections from one
// address then hold at most maxPendingHandshakesPerAddress of the maxPendingHandshakes slots
// until readTimeout closes them, and the other addresses keep the rest.
//
// A refused connection is told why (RESOURCE_EXHAUSTED) and closed after a short linger, so
// that a client which already sent its first frame reads the error instead of a reset. The
// lingering refusals are bounded too: beyond maxPendingHandshakes of them a socket is closed
// without a word, so a flood costs neither unbounded memory nor unbounded log lines.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>
#include <utility>

#include "agent/channel/control_channel_impl.h"

namespace kvx::agent::channel {
namespace {

constexpr std::chrono::milliseconds kRefusalLinger{200};

}  // namespace

Status ControlChannel::Impl::admit(const std::string& remoteIp) const {
  std::uint32_t fromAddress = 0;
  std::uint32_t handshakes = 0;
  std::uint32_t handshakesFromAddress = 0;
  for (const auto& [id, link] : links_) {
    if (!link.inbound || link.state == Link::State::kClosing) continue;
    const bool sameAddress = !remoteIp.empty() && link.remoteIp == remoteIp;
    if (sameAddress) ++fromAddress;
    if (link.state != Link::State::kHandshake) continue;
    ++handshakes;
    if (sameAddress) ++handshakesFromAddress;
  }
  if (fromAddress >= options_.maxConnectionsPerAddress) {
    return resourceExhausted(remoteIp + " already has " + std::to_string(fromAddress) +
                             " control connections open to this agent, its limit "
                             "(maxConnectionsPerAddress " +
                             std::to_string(options_.maxConnectionsPerAddress) +
                             "); close some first");
  }
  // Checked before the global limit: an address over its share is told that it is the one
  // at fault, even when it has filled the global limit as well.
  if (handshakesFromAddress >= options_.maxPendingHandshakesPerAddress) {
    return resourceExhausted(remoteIp + " already has " + std::to_string(handshakesFromAddress) +
                             " control handshakes in progress with this agent, its limit "
                             "(maxPendingHandshakesPerAddress " +
                             std::to_string(options_.maxPendingHandshakesPerAddress) +
                             "); finish or close them first");
  }
  if (handshakes >= options_.maxPendingHandshakes) {
    return resourceExhausted(std::to_string(handshakes) +
                             " control handshakes are already in progress, the limit "
                             "(maxPendingHandshakes " +
                             std::to_string(options_.maxPendingHandshakes) +
                             "); try again shortly");
  }
  return Status::ok();
}

void ControlChannel::Impl::refuse(boost::asio::ip::tcp::socket socket, const Status& why) {
  if (refusedInSpell_++ == 0) {
    boost::system::error_code ignored;
    const auto remote = socket.remote_endpoint(ignored);
    spdlog::warn(
        "{}: refusing a connection from {}: {} (further refusals are counted, not logged, "
        "until a connection is admitted)",
        logName_, ignored ? std::string("(unknown)") : remote.address().to_string(),
        why.toString());
  }
  const auto lingering = static_cast<std::uint64_t>(std::count_if(
      links_.begin(), links_.end(), [](const auto& entry) { return entry.second.refused; }));
  if (lingering >= options_.maxPendingHandshakes) {
    boost::system::error_code ignored;
    socket.close(ignored);
    return;
  }
  const std::uint64_t id = nextId_++;
  // With TLS the refusal too is said over TLS, if the handshake fits within the linger.
  auto connection = std::make_shared<ControlConnection>(
      makeByteStream(std::move(socket), tls_, /*server=*/true), options_.maxFrameBytes,
      options_.readTimeout, options_.readTimeout);
  Link& link = links_[id];
  link.connection = connection;
  link.inbound = true;
  link.refused = true;
  link.state = Link::State::kClosing;
  connection->start(
      ControlConnection::Callbacks{[](Frame) {}, [](const Status&) {},
                                   [this, id](const Status& closed) { onClosed(id, closed); }});
  connection->send(encodeMessage(ErrorMessage::fromStatus(why)));
  connection->closeAfterFlush(why, std::min(options_.readTimeout, kRefusalLinger));
}

void ControlChannel::Impl::noteAdmitted() {
  if (refusedInSpell_ > 1) {
    spdlog::warn("{}: refused {} more connections over the limits before admitting this one",
                 logName_, refusedInSpell_ - 1);
  }
  refusedInSpell_ = 0;
}

}  // namespace kvx::agent::channel
