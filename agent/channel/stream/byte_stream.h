#pragma once

// ByteStream: the ordered, reliable byte stream a ControlConnection reads and writes frames
// on. Two kinds: plain TCP (tcp_stream.h) and TLS over TCP (tls_stream.h); makeByteStream
// is the one place that chooses. The framing, deadlines and liveness of the control channel
// live in ControlConnection and are the same over both.
//
// Threading: created, used and destroyed on the channel's io thread only, like the
// ControlConnection that owns it. Not thread-safe. At most one read and one write may be
// outstanding at a time, and neither before open() has completed with OK.
//
// Handlers are always invoked as Asio completions or posted handlers, never from inside the
// call that started the operation. The owner keeps the stream alive until they have run
// (ControlConnection: every handler holds a shared_ptr to it).

#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>

#include "kvx/status.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace kvx::agent::channel {

class ByteStream {
 public:
  using IoHandler = std::function<void(const boost::system::error_code&, std::size_t)>;
  using OpenHandler = std::function<void(const Status&)>;

  virtual ~ByteStream() = default;

  // The TCP connection underneath: its addresses, its options, half-closing and closing it.
  // Closing it aborts every operation in progress (their handlers still run).
  virtual boost::asio::ip::tcp::socket& socket() = 0;

  // Whether reads and writes may start now. A plain stream is ready at once; a TLS stream
  // once its handshake has completed.
  virtual bool ready() const = 0;

  // Makes the stream ready (TLS: the handshake). `done` runs once, with OK or why not
  // (UNAUTHENTICATED for a peer whose credentials or protocol do not match, PEER_FAILED for
  // a broken connection). It sets no deadline of its own: the owner bounds it by closing
  // socket(). REQUIRES: !ready(), called at most once.
  virtual void asyncOpen(OpenHandler done) = 0;

  // After asyncOpen failed: whether writes still reach the peer, so that the owner can tell
  // it why before closing (a TLS listener that found a plain-TCP peer answers in plain).
  virtual bool writableAfterFailedOpen() const = 0;

  // Reads at least one byte into `buffer`. A peer that closed its side gives
  // boost::asio::error::eof, however it closed (a TLS peer need not send close_notify: the
  // framing above detects a truncated frame).
  virtual void asyncReadSome(boost::asio::mutable_buffer buffer, IoHandler done) = 0;

  // Writes all of `buffer`, which must stay valid until `done` runs.
  virtual void asyncWrite(boost::asio::const_buffer buffer, IoHandler done) = 0;

  // Bytes that have arrived and not been read yet (zero when unknown).
  virtual std::size_t bytesWaiting() = 0;

  // The Status for an error of this stream's reads and writes: `what` names the operation
  // ("read from 10.0.0.2:7001"); the code is PEER_FAILED for a broken connection and
  // UNAUTHENTICATED for a TLS peer that rejected this agent's certificate.
  virtual Status errorStatus(std::string_view what,
                             const boost::system::error_code& error) const = 0;
};

// A plain stream over `socket` when `tls` is null; else a TLS stream with `tls`'s
// certificates, as the server of the handshake when `server` (an accepted connection), else
// as its client. REQUIRES: `socket` is connected.
std::unique_ptr<ByteStream> makeByteStream(boost::asio::ip::tcp::socket socket,
                                           std::shared_ptr<boost::asio::ssl::context> tls,
                                           bool server);

}  // namespace kvx::agent::channel
