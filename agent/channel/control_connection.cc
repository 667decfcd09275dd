#include "agent/channel/control_connection.h"

#include <malloc.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cstdio>
#include <utility>

#include "agent/channel/host_port.h"

namespace kvx::agent::channel {
namespace {

constexpr std::size_t kReadChunkBytes = 64 * 1024;
// Frames from this size on are followed by malloc_trim.
constexpr std::size_t kTrimAfterFrameBytes = 1u << 20;

std::string describeRemote(const boost::asio::ip::tcp::socket& socket) {
  boost::system::error_code error;
  const auto endpoint = socket.remote_endpoint(error);
  return error ? std::string("(unknown peer)") : formatHostPort(endpoint);
}

}  // namespace

ControlConnection::ControlConnection(std::unique_ptr<ByteStream> stream,
                                     std::uint32_t maxFrameBytes,
                                     std::chrono::milliseconds frameTimeout,
                                     std::chrono::milliseconds writeTimeout)
    : stream_(std::move(stream)),
      readTimer_(stream_->socket().get_executor()),
      writeTimer_(stream_->socket().get_executor()),
      livenessTimer_(stream_->socket().get_executor()),
      frameTimeout_(frameTimeout),
      writeTimeout_(writeTimeout),
      remoteAddress_(describeRemote(stream_->socket())),
      streamReady_(stream_->ready()),
      decoder_(maxFrameBytes),
      readBuffer_(kReadChunkBytes) {
  boost::system::error_code ignored;
  stream_->socket().set_option(boost::asio::ip::tcp::no_delay(true), ignored);
}

void ControlConnection::start(Callbacks callbacks) {
  callbacks_ = std::move(callbacks);
  if (streamReady_) {
    readSome();
    return;
  }
  stream_->asyncOpen([self = shared_from_this()](const Status& result) { self->onOpened(result); });
}

void ControlConnection::onOpened(const Status& result) {
  if (state_ == State::kClosed) return;
  if (!result.isOk()) {
    if (state_ == State::kOpen && stream_->writableAfterFailedOpen()) {
      streamReady_ = true;  // to write the owner's answer; failRead stops frames for good
      failRead(result);
    } else {
      close(result);
    }
    return;
  }
  streamReady_ = true;
  readSome();
  if (!writeQueue_.empty()) {
    writeNext();
  } else if (state_ == State::kDraining) {
    afterFlush();
  }
}

void ControlConnection::send(std::vector<std::uint8_t> bytes) {
  if (state_ != State::kOpen) return;
  if (sendSeal_) bytes = sendSeal_->seal(bytes);  // in queue order, which is wire order
  writeQueue_.push_back(std::move(bytes));
  if (!writing_ && streamReady_) writeNext();
}

void ControlConnection::setReadDeadline(std::optional<Deadline> deadline) {
  readDeadline_ = deadline;
  if (state_ == State::kOpen) armReadTimer();
}

void ControlConnection::closeAfterFlush(Status why, std::chrono::milliseconds linger) {
  if (state_ != State::kOpen) return;
  state_ = State::kDraining;
  closeReason_ = std::move(why);
  linger_ = linger;
  readTimer_.cancel();
  livenessTimer_.cancel();
  if (!streamReady_) {
    armLinger();  // bounds the opening; onOpened flushes if it completes in time
  } else if (!writing_) {
    afterFlush();
  }
}

void ControlConnection::close(Status why) {
  if (state_ == State::kClosed) return;
  // While draining, the reason given when closing began says more than what cut it short.
  if (state_ == State::kOpen) closeReason_ = std::move(why);
  finishClose();
}

void ControlConnection::readSome() {
  if (reading_ || state_ == State::kClosed) return;
  reading_ = true;
  stream_->asyncReadSome(
      boost::asio::buffer(readBuffer_),
      [self = shared_from_this()](const boost::system::error_code& error, std::size_t bytes) {
        self->reading_ = false;
        self->onRead(error, bytes);
      });
}

void ControlConnection::onRead(const boost::system::error_code& error, std::size_t bytes) {
  if (state_ == State::kClosed) return;
  if (error) {
    if (state_ == State::kDraining) {
      peerClosed_ = true;
      if (!writing_) finishClose();
      return;
    }
    if (error == boost::asio::error::eof) {
      std::string message = "connection closed by " + remoteAddress_;
      if (decoder_.midFrame()) {
        message += " in the middle of a frame (" + std::to_string(decoder_.bufferedBytes()) +
                   " bytes of it received)";
      }
      close(peerFailed(std::move(message)));
    } else {
      close(stream_->errorStatus("read from " + remoteAddress_, error));
    }
    return;
  }
  if (bytes > 0) lastReceived_ = Clock::now();
  if (state_ == State::kOpen && !readFailed_) {
    // One frame at a time, each handed over before the next header is checked: the owner
    // may change the frame limit in between (setMaxFrameBytes).
    std::span<const std::uint8_t> rest(readBuffer_.data(), bytes);
    Status fed;
    bool large = false;
    while (state_ == State::kOpen) {
      Result<std::size_t> consumed = decoder_.feedUntilFrame(rest);
      if (consumed.isOk()) {
        rest = rest.subspan(*consumed);
      } else {
        fed = consumed.status();
      }
      while (std::optional<Frame> frame = decoder_.next()) {
        if (state_ != State::kOpen) break;
        if (receiveSeal_) {
          Status opened = receiveSeal_->open(*frame);
          if (!opened.isOk()) {
            fed = opened.withContext("a frame from " + remoteAddress_);
            break;
          }
        }
        large = large || frame->payload.size() >= kTrimAfterFrameBytes;
        callbacks_.onFrame(std::move(*frame));
      }
      if (!fed.isOk() || rest.empty()) break;
    }
    // A large frame and what parsing it allocated are freed by now, but the allocator keeps
    // the pages: give them back, so that one burst of large messages does not stay resident.
    if (large) ::malloc_trim(0);
    if (state_ == State::kOpen && !fed.isOk()) {
      failRead(fed);
    } else if (state_ == State::kOpen) {
      if (!decoder_.midFrame()) {
        frameStarted_.reset();
      } else if (!frameStarted_) {
        frameStarted_ = Clock::now();
      }
      armReadTimer();
    }
  }
  readSome();
}

void ControlConnection::setMaxFrameBytes(std::uint32_t maxFrameBytes) {
  decoder_.setMaxPayloadBytes(maxFrameBytes);
}

void ControlConnection::sealFrames(const AuthBytes& sendKey, const AuthBytes& receiveKey) {
  sendSeal_.emplace(sendKey);
  receiveSeal_.emplace(receiveKey);
}

void ControlConnection::failRead(Status why) {
  readFailed_ = true;
  readTimer_.cancel();
  callbacks_.onReadFailed(why);
  // The owner is expected to close; never leave a connection reading with no deadline.
  if (state_ == State::kOpen) close(std::move(why));
}

void ControlConnection::armReadTimer() {
  if (readFailed_) return;
  std::optional<Deadline> deadline = readDeadline_;
  if (frameStarted_) {
    const Deadline frameDeadline = *frameStarted_ + frameTimeout_;
    deadline = deadline ? std::min(*deadline, frameDeadline) : frameDeadline;
  }
  if (!deadline) {
    readTimer_.cancel();
    return;
  }
  readTimer_.expires_at(*deadline);
  readTimer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    if (!error) self->onReadTimer();
  });
}

void ControlConnection::onReadTimer() {
  if (state_ != State::kOpen || readFailed_) return;
  const Deadline now = Clock::now();
  if (!streamReady_ && readDeadline_ && now >= *readDeadline_) {
    close(timedOut("the TLS handshake with " + remoteAddress_ +
                   " did not complete by the handshake deadline"));
  } else if (readDeadline_ && now >= *readDeadline_) {
    failRead(timedOut("no complete frame from " + remoteAddress_ + " by the read deadline"));
  } else if (frameStarted_ && now >= *frameStarted_ + frameTimeout_) {
    failRead(timedOut("a frame from " + remoteAddress_ + " stayed incomplete for " +
                      std::to_string(frameTimeout_.count()) + " ms (" +
                      std::to_string(decoder_.bufferedBytes()) + " bytes received)"));
  } else {
    armReadTimer();  // woken early by a timer that was moved
  }
}

void ControlConnection::startLiveness(Liveness liveness) {
  if (state_ != State::kOpen || livenessOn_) return;
  livenessOn_ = true;
  liveness_ = std::move(liveness);
  const Deadline now = Clock::now();
  lastReceived_ = now;
  nextHeartbeat_ = now + liveness_.sendEvery;
  armLivenessTimer();
}

void ControlConnection::armLivenessTimer() {
  const bool sending = liveness_.sendEvery.count() > 0;
  const bool checking = liveness_.timeout.count() > 0;
  if (!sending && !checking) return;
  Deadline next = sending ? nextHeartbeat_ : lastReceived_ + liveness_.timeout;
  if (checking) next = std::min(next, lastReceived_ + liveness_.timeout);
  livenessTimer_.expires_at(next);
  livenessTimer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    if (!error) self->onLivenessTimer();
  });
}

void ControlConnection::onLivenessTimer() {
  if (state_ != State::kOpen) return;
  const Deadline now = Clock::now();
  if (liveness_.timeout.count() > 0 && now >= lastReceived_ + liveness_.timeout) {
    // Bytes already here mean the peer spoke and this side was slow to read (its thread or
    // process was held up): that is not the peer's silence.
    if (stream_->bytesWaiting() > 0) {
      lastReceived_ = now;
    } else {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%.1f",
                    std::chrono::duration<double>(liveness_.timeout).count());
      close(peerFailed("no sign of life from '" + liveness_.peerName + "' for " + seconds +
                       " s (peer timeout)"));
      return;
    }
  }
  if (liveness_.sendEvery.count() > 0 && now >= nextHeartbeat_) {
    if (!writing_ && writeQueue_.empty()) send(liveness_.heartbeat);
    nextHeartbeat_ = now + liveness_.sendEvery;
  }
  armLivenessTimer();
}

void ControlConnection::writeNext() {
  if (writeQueue_.empty() || state_ == State::kClosed) return;
  writing_ = true;
  const std::uint64_t seq = ++writeSeq_;
  writeTimer_.expires_after(writeTimeout_);
  writeTimer_.async_wait([self = shared_from_this(), seq](const boost::system::error_code& error) {
    if (error || !self->writing_ || self->writeSeq_ != seq) return;
    self->close(timedOut("write to " + self->remoteAddress_ + " did not complete within " +
                         std::to_string(self->writeTimeout_.count()) +
                         " ms: the peer is not reading"));
  });
  stream_->asyncWrite(
      boost::asio::buffer(writeQueue_.front()),
      [self = shared_from_this()](const boost::system::error_code& error, std::size_t) {
        self->writing_ = false;
        self->writeTimer_.cancel();
        if (self->state_ == State::kClosed) return;
        if (error) {
          self->close(self->stream_->errorStatus("write to " + self->remoteAddress_, error));
          return;
        }
        self->writeQueue_.pop_front();
        if (!self->writeQueue_.empty()) {
          self->writeNext();
        } else if (self->state_ == State::kDraining) {
          self->afterFlush();
        }
      });
}

void ControlConnection::afterFlush() {
  boost::system::error_code ignored;
  stream_->socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
  if (peerClosed_ || linger_.count() <= 0) {
    finishClose();
    return;
  }
  armLinger();
  readSome();
}

void ControlConnection::armLinger() {
  if (linger_.count() <= 0) {
    finishClose();
    return;
  }
  readTimer_.expires_after(linger_);
  readTimer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    if (!error && self->state_ == State::kDraining) self->finishClose();
  });
}

void ControlConnection::finishClose() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  writeQueue_.clear();
  // A frame cut off by the close (a peer that announced megabytes and stopped, before or
  // after authenticating) is never delivered: its memory goes back now, not when the last
  // reference to this connection does, and the allocator gives its pages back.
  const bool large = decoder_.reservedBytes() >= kTrimAfterFrameBytes;
  decoder_.discard();
  if (large) ::malloc_trim(0);
  readTimer_.cancel();
  writeTimer_.cancel();
  livenessTimer_.cancel();
  boost::system::error_code ignored;
  stream_->socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  stream_->socket().close(ignored);
  if (callbacks_.onClosed) {
    boost::asio::post(stream_->socket().get_executor(), [self = shared_from_this()] {
      auto onClosed = std::move(self->callbacks_.onClosed);
      self->callbacks_ = {};
      onClosed(self->closeReason_);
    });
  }
}

}  // namespace kvx::agent::channel
