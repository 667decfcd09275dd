// ControlChannel::Impl, part three: the authentication that opens a handshake when the
// channel has a token (the exchange is in messages/auth_begin.h, the proofs in auth_proof.h),
// and the peer's errors during the handshake. Channel thread only.
//
// Order matters for what each side reveals: the server proves itself first, and the client
// sends its Hello only after checking that proof; the server answers a Hello with its
// metadata only after checking the client's proof. A failed check ends the connection with
// UNAUTHENTICATED; the token never appears in a message or a log line.

#include <spdlog/spdlog.h>

#include <string>
#include <utility>

#include "agent/channel/auth_proof.h"
#include "agent/channel/control_channel_impl.h"
#include "agent/channel/frame_seal.h"

namespace kvx::agent::channel {
namespace {

constexpr const char* kConfigureHint =
    "configure the same token (KVX_AUTH_TOKEN or a token file) on both agents";

}  // namespace

void ControlChannel::Impl::beginAuth(Link& link) {
  if (link.inbound) {
    link.auth = Link::Auth::kAwaitBegin;
    return;
  }
  Result<AuthBytes> nonce = randomNonce();
  if (!nonce.isOk()) {
    failLink(link, nonce.status());
    return;
  }
  link.clientNonce = *nonce;
  link.auth = Link::Auth::kAwaitChallenge;
  link.connection->send(encodeMessage(AuthBegin{link.clientNonce}));
}

void ControlChannel::Impl::onAuthMessage(Link& link, Message message) {
  const std::string peer = "peer at " + link.connection->remoteAddress();
  const std::string got(toString(messageType(message)));
  const std::string& token = options_.authToken;
  switch (link.auth) {
    case Link::Auth::kAwaitBegin: {
      const auto* begin = std::get_if<AuthBegin>(&message);
      if (begin == nullptr) {
        failLink(link, unauthenticated(peer + " did not authenticate: it sent " + got +
                                       " first, and this agent accepts only peers that prove "
                                       "they hold its auth token; " +
                                       kConfigureHint));
        return;
      }
      Result<AuthBytes> nonce = randomNonce();
      if (!nonce.isOk()) {
        failLink(link, nonce.status());
        return;
      }
      link.clientNonce = begin->nonce;
      link.serverNonce = *nonce;
      link.auth = Link::Auth::kAwaitResponse;
      link.connection->send(encodeMessage(
          AuthChallenge{link.serverNonce, serverProof(token, link.clientNonce, link.serverNonce)}));
      return;
    }
    case Link::Auth::kAwaitChallenge: {
      const auto* challenge = std::get_if<AuthChallenge>(&message);
      if (challenge == nullptr) {
        failLink(link, unauthenticated(peer +
                                       " did not authenticate: expected auth_challenge "
                                       "in reply to auth_begin, got " +
                                       got));
        return;
      }
      if (!proofMatches(serverProof(token, link.clientNonce, challenge->nonce), challenge->proof)) {
        failLink(link, unauthenticated(peer +
                                       " failed authentication: its proof does not match this "
                                       "agent's token (the agents' tokens differ); " +
                                       kConfigureHint));
        return;
      }
      link.serverNonce = challenge->nonce;
      link.auth = Link::Auth::kDone;
      link.connection->setMaxFrameBytes(options_.maxFrameBytes);
      link.connection->send(
          encodeMessage(AuthResponse{clientProof(token, link.serverNonce, link.clientNonce)}));
      // Every frame after the proof, both ways, is sealed: the hello first.
      const FrameKeys keys = frameKeys(token, link.clientNonce, link.serverNonce);
      link.connection->sealFrames(keys.clientToServer, keys.serverToClient);
      link.connection->send(std::move(link.hello));
      link.hello.clear();
      spdlog::debug("{}: {} authenticated", logName_, peer);
      return;
    }
    case Link::Auth::kAwaitResponse: {
      const auto* response = std::get_if<AuthResponse>(&message);
      if (response == nullptr) {
        failLink(link, unauthenticated(peer +
                                       " did not authenticate: expected auth_response, "
                                       "got " +
                                       got));
        return;
      }
      if (!proofMatches(clientProof(token, link.serverNonce, link.clientNonce), response->proof)) {
        failLink(link, unauthenticated(peer +
                                       " failed authentication: its proof does not match this "
                                       "agent's token (the tokens differ, or the proof was made "
                                       "for another connection); " +
                                       kConfigureHint));
        return;
      }
      link.auth = Link::Auth::kDone;
      link.connection->setMaxFrameBytes(options_.maxFrameBytes);
      const FrameKeys keys = frameKeys(token, link.clientNonce, link.serverNonce);
      link.connection->sealFrames(keys.serverToClient, keys.clientToServer);
      spdlog::debug("{}: {} authenticated", logName_, peer);
      return;
    }
    case Link::Auth::kDone: break;
  }
}

void ControlChannel::Impl::onHandshakeError(Link& link, const ErrorMessage& error) {
  const std::string peer = "peer at " + link.connection->remoteAddress();
  const bool authFailure = error.code == toString(StatusCode::kUnauthenticated);
  std::string context;
  if (link.inbound) {
    context = peer + " ended the handshake";
  } else if (authFailure && link.auth == Link::Auth::kAwaitChallenge) {
    context = peer + " did not authenticate";
  } else if (authFailure && options_.authToken.empty()) {
    context = peer + " requires authentication";
  } else if (link.auth != Link::Auth::kDone) {
    context = peer + " refused the connection";
  } else {
    context = peer + " rejected the hello";
  }
  const Status why = error.toStatus(context);
  spdlog::warn("{}: {}", logName_, why.toString());
  if (link.slot) link.slot->set(why);
  link.state = Link::State::kClosing;
  link.connection->close(why);
}

}  // namespace kvx::agent::channel
