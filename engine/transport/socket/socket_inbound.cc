#include "engine/transport/socket/socket_inbound.h"

#include <spdlog/spdlog.h>
#include <sys/epoll.h>

#include <algorithm>
#include <cstdio>

#include "engine/transport/socket/socket_transport.h"

namespace kvx::engine::socket {
namespace {

std::string hex(std::uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

InboundConnection::InboundConnection(SocketTransport& transport, int fd, std::string peer,
                                     Clock::time_point now)
    : transport_(transport),
      stream_(fd, std::move(peer)),
      helloDeadline_(now + transport.connectTimeout()) {}

Status InboundConnection::writeAnswers() {
  if (!stream_.hasOutput()) return Status::ok();
  // Answers to an initiator that is gone are dropped unsent: a get's answer is written from
  // the region, whose blocks its owner may already have given to another request (a peer
  // killed while this agent was stopped: its reset or close is here when this agent resumes).
  if (stream_.peerGone()) {
    return peerFailed("socket data connection from " + stream_.peer() +
                      ": the initiator closed or reset it; its answers are dropped");
  }
  return stream_.writeSome();
}

bool InboundConnection::onEventsLocked(std::uint32_t events) {
  if (ended_) return false;
  bool moved = false;
  Status written = writeAnswers();
  if (!written.isOk()) {
    endLocked(written);
    return true;
  }
  if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0 && !throttled()) {
    Result<bool> pumped = reader_.pump(stream_, *this, kReadBudgetBytes);
    if (!pumped.isOk()) {
      endLocked(pumped.status());
      return true;
    }
    moreInput_ = *pumped;
    moved = true;
  }
  written = writeAnswers();
  if (!written.isOk()) {
    endLocked(written);
    return true;
  }
  updateWatch();
  return moved;
}

void InboundConnection::onTickLocked(Clock::time_point now) {
  if (!ended_ && !greeted_ && now >= helloDeadline_) {
    endLocked(timedOut("socket data connection from " + stream_.peer() + " sent no hello within " +
                       std::to_string(transport_.connectTimeout().count()) + " ms"));
  }
}

bool InboundConnection::touchesRegionLocked(std::uint64_t region) const {
  transport_.mutex().assumeHeld();
  return (reader_.inBody() && placingRegion_ == region) || stream_.hasQueuedTag(region);
}

void InboundConnection::endLocked(const Status& why) {
  transport_.mutex().assumeHeld();
  if (ended_) return;
  ended_ = true;
  if (why.code() == StatusCode::kProtocolError || why.code() == StatusCode::kTimedOut ||
      why.code() == StatusCode::kUnauthenticated) {
    spdlog::warn("[{}] closing a socket data connection: {}", transport_.agentName(),
                 why.toString());
  } else {
    spdlog::debug("[{}] socket data connection ended: {}", transport_.agentName(), why.toString());
  }
  transport_.removeConnectionLocked(id_, stream_.fd());
  stream_.abort();
  transport_.retireLocked(id_);
}

Result<BodySink> InboundConnection::onHeader(const FrameHeader& header) {
  refusal_ = Status::ok();
  placingRegion_ = 0;
  access_ = RegionAccess{};
  if (!greeted_) {
    if (header.type != FrameType::kHello) {
      return protocolError("socket data connection from " + stream_.peer() + " began with a " +
                           std::string(toString(header.type)) + " frame, not a hello");
    }
    if (header.region != transport_.instance()) {
      refusal_ = peerFailed("socket transport instance " + hex(header.region) +
                            " is not running here any more (this is instance " +
                            hex(transport_.instance()) +
                            "): the agent restarted; fetch its metadata again");
    } else if (header.aux < transport_.leastProtection()) {
      refusal_ = unauthenticated("the data connection from " + stream_.peer() + " asked for " +
                                 std::string(describeProtection(header.aux)) +
                                 "; this agent's data path takes no less than " +
                                 std::string(describeProtection(transport_.leastProtection())));
    }
    return BodySink{nullptr, true, false};  // the initiator's nonce
  }
  switch (header.type) {
    case FrameType::kPut:
    case FrameType::kGet: {
      Result<RegionAccess> access =
          transport_.accessLocked(header.region, header.key, header.address, header.length);
      if (!access.isOk()) {
        refusal_ = access.status();
        return BodySink{};  // a refused put's data is read and dropped
      }
      access_ = *access;
      if (header.type == FrameType::kGet) return BodySink{};
      placingRegion_ = header.region;
      if (access_.device >= 0) return BodySink{nullptr, true, true};  // copied in by onFrame
      return BodySink{access->address, false, true};
    }
    case FrameType::kMessage: return BodySink{nullptr, true, false};
    default:
      return protocolError("socket data connection from " + stream_.peer() + " sent a " +
                           std::string(toString(header.type)) +
                           " frame, which only the answering side sends");
  }
}

Status InboundConnection::onFrame(const FrameHeader& header, std::vector<std::uint8_t> body) {
  switch (header.type) {
    case FrameType::kHello:
      if (!refusal_.isOk()) {
        reply(header, refusal_);
        (void)stream_.writeSome();  // best effort: the initiator reads it before the reset
        return refusal_;
      }
      return welcome(header, body);
    case FrameType::kPut:
      placingRegion_ = 0;
      if (refusal_.isOk() && access_.device >= 0) {
        refusal_ = transport_.deviceCopiesLocked().toDevice(access_.address, access_.device, body);
      }
      reply(header, refusal_);
      return Status::ok();
    case FrameType::kGet: {
      std::string fromDevice;
      if (refusal_.isOk() && access_.device >= 0) {
        fromDevice.assign(header.length, '\0');
        refusal_ = transport_.deviceCopiesLocked().fromDevice(
            std::span<std::uint8_t>(reinterpret_cast<std::uint8_t*>(fromDevice.data()),
                                    fromDevice.size()),
            access_.address, access_.device);
      }
      if (!refusal_.isOk()) {
        reply(header, refusal_);
        return Status::ok();
      }
      FrameHeader data;
      data.type = FrameType::kData;
      data.sequence = header.sequence;
      data.length = header.length;
      if (access_.device >= 0) {
        stream_.queueOwned(data, std::move(fromDevice));
      } else {
        stream_.queue(data, std::span<const std::uint8_t>(access_.address, header.length), {},
                      header.region);
      }
      return Status::ok();
    }
    case FrameType::kMessage: {
      const std::span<const std::uint8_t> bytes(body);
      transport_.deliverMessageLocked(bytes.first(header.aux), bytes.subspan(header.aux));
      reply(header, Status::ok());
      return Status::ok();
    }
    default:
      return internalError("socket frame type " + std::string(toString(header.type)) +
                           " passed onHeader");
  }
}

Status InboundConnection::welcome(const FrameHeader& hello, std::span<const std::uint8_t> nonce) {
  ConnectionIdentity identity;
  identity.protection = hello.aux;
  std::copy(nonce.begin(), nonce.end(), identity.initiatorNonce.begin());
  KVX_ASSIGN_OR_RETURN(identity.targetNonce, freshNonce());
  identity.initiatorInstance = hello.key;
  identity.targetInstance = transport_.instance();
  KVX_ASSIGN_OR_RETURN(ConnectionProtection protection,
                       protectConnection(transport_.dataKey(), identity, ConnectionEnd::kTarget));
  FrameHeader answer;
  answer.type = FrameType::kWelcome;
  answer.region = hello.key;
  answer.key = transport_.instance();
  answer.length = kNonceBytes;
  stream_.queuePlain(answer, std::string(identity.targetNonce.begin(), identity.targetNonce.end()));
  stream_.protect(std::move(protection.sending));
  reader_.protect(std::move(protection.receiving));
  greeted_ = true;
  initiator_ = hello.key;
  return Status::ok();
}

void InboundConnection::reply(const FrameHeader& request, const Status& status) {
  FrameHeader answer;
  answer.sequence = request.sequence;
  if (status.isOk()) {
    answer.type = FrameType::kDone;
    stream_.queue(answer);
    return;
  }
  std::string text = status.message().substr(0, kMaxErrorTextBytes);
  answer.type = FrameType::kError;
  answer.aux = static_cast<std::uint32_t>(status.code());
  answer.length = text.size();
  if (greeted_) {
    stream_.queueOwned(answer, std::move(text));
  } else {
    stream_.queuePlain(answer, std::move(text));  // a refused hello: there are no keys
  }
}

void InboundConnection::updateWatch() {
  const bool write = stream_.hasOutput();
  const bool read = !throttled();
  if (ended_ || (write == watchingWrite_ && read == watchingRead_)) return;
  transport_.watchLocked(id_, stream_.fd(), write, read);
  watchingWrite_ = write;
  watchingRead_ = read;
}

}  // namespace kvx::engine::socket
