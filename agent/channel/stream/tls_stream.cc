#include "agent/channel/stream/tls_stream.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>
#include <cstdint>
#include <utility>

#include "agent/channel/asio_status.h"
#include "agent/channel/host_port.h"
#include "agent/channel/stream/tls_error.h"

namespace kvx::agent::channel {
namespace {

namespace ssl = boost::asio::ssl;
using boost::asio::ip::tcp;

// Every TLS connection opens with a handshake record (content type 22).
constexpr std::uint8_t kTlsHandshakeRecord = 0x16;

std::string describeRemote(const tcp::socket& socket) {
  boost::system::error_code error;
  const auto endpoint = socket.remote_endpoint(error);
  return error ? std::string("(unknown peer)") : formatHostPort(endpoint);
}

}  // namespace

TlsStream::TlsStream(tcp::socket socket, std::shared_ptr<ssl::context> context, Role role)
    : context_(std::move(context)),
      stream_(std::move(socket), *context_),
      role_(role),
      native_(stream_.native_handle()),
      remote_(describeRemote(stream_.next_layer())) {}

void TlsStream::asyncOpen(OpenHandler done) {
  if (role_ == Role::kClient) {
    handshake(std::move(done));
    return;
  }
  // Wait for the first byte without consuming it: the handshake reads it again.
  socket().async_wait(tcp::socket::wait_read,
                      [this, done = std::move(done)](const boost::system::error_code& error) {
                        onFirstByteReady(error, done);
                      });
}

void TlsStream::onFirstByteReady(const boost::system::error_code& error, const OpenHandler& done) {
  const std::string what = "TLS handshake with " + remote_;
  if (error) {
    done(asioStatus(StatusCode::kPeerFailed, what, error));
    return;
  }
  std::uint8_t first = 0;
  boost::system::error_code peekError;
  // Non-blocking, so that a spurious wake-up cannot stall the channel's thread: it waits again.
  socket().non_blocking(true, peekError);
  const std::size_t got = peekError ? 0
                                    : socket().receive(boost::asio::buffer(&first, 1),
                                                       tcp::socket::message_peek, peekError);
  if (peekError == boost::asio::error::would_block) {
    asyncOpen(done);
    return;
  }
  if (peekError) {
    done(asioStatus(StatusCode::kPeerFailed, what, peekError));
    return;
  }
  if (got == 0) {
    done(peerFailed(what + ": connection closed by " + remote_ + " before it began"));
    return;
  }
  if (first != kTlsHandshakeRecord) {
    plainPeer_ = true;
    done(unauthenticated(
        "this agent's control channel requires TLS, and " + remote_ +
        " connected without it; enable TLS on both agents (kvx agent --tls-cert, --tls-key, "
        "--tls-ca, with certificates from the same CA)"));
    return;
  }
  handshake(done);
}

void TlsStream::handshake(OpenHandler done) {
  const auto type = role_ == Role::kServer ? ssl::stream_base::server : ssl::stream_base::client;
  stream_.async_handshake(type,
                          [this, done = std::move(done)](const boost::system::error_code& error) {
                            if (error) {
                              done(errorStatus("TLS handshake with " + remote_, error));
                              return;
                            }
                            handshakeDone_ = true;
                            done(Status::ok());
                          });
}

void TlsStream::asyncReadSome(boost::asio::mutable_buffer buffer, IoHandler done) {
  if (plainPeer_) {
    socket().async_read_some(buffer, std::move(done));
    return;
  }
  stream_.async_read_some(
      buffer, [done = std::move(done)](const boost::system::error_code& error, std::size_t bytes) {
        // A peer that closed without close_notify has closed all the same (see the header).
        if (error == ssl::error::stream_truncated) {
          done(boost::asio::error::eof, bytes);
        } else {
          done(error, bytes);
        }
      });
}

void TlsStream::asyncWrite(boost::asio::const_buffer buffer, IoHandler done) {
  if (plainPeer_) {
    boost::asio::async_write(socket(), buffer, std::move(done));
    return;
  }
  boost::asio::async_write(stream_, buffer, std::move(done));
}

std::size_t TlsStream::bytesWaiting() {
  boost::system::error_code error;
  const std::size_t raw = socket().available(error);
  const int decrypted = plainPeer_ ? 0 : SSL_pending(native_);
  return (error ? 0 : raw) + static_cast<std::size_t>(decrypted > 0 ? decrypted : 0);
}

Status TlsStream::errorStatus(std::string_view what, const boost::system::error_code& error) const {
  return tlsStatus(what, remote_, error, SSL_get_verify_result(native_));
}

}  // namespace kvx::agent::channel
