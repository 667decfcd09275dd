#pragma once

// TlsStream: a ByteStream that is TLS over a TCP socket (policy: tls_context.h). asyncOpen
// runs the handshake.
//
// As a server it first peeks at the peer's first byte: a peer that does not open with a TLS
// handshake record (a kvx agent without TLS sends a "KVXC" frame) fails the open with
// UNAUTHENTICATED, and the stream then writes in plain, so that the owner can tell that
// peer in its own protocol why it is turned away. Nothing the peer sends is ever delivered.
//
// Closing: a half-close is a TCP FIN without a TLS close_notify, and a peer's missing
// close_notify reads as end of stream; truncation cannot go unnoticed because frames carry
// their length.
//
// Threading and guarantees: byte_stream.h.

#include <openssl/ssl.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <memory>
#include <string>

#include "agent/channel/stream/byte_stream.h"

namespace kvx::agent::channel {

class TlsStream final : public ByteStream {
 public:
  enum class Role { kServer, kClient };

  // REQUIRES: `socket` is connected; `context` comes from makeTlsContext.
  TlsStream(boost::asio::ip::tcp::socket socket, std::shared_ptr<boost::asio::ssl::context> context,
            Role role);

  boost::asio::ip::tcp::socket& socket() override { return stream_.next_layer(); }
  bool ready() const override { return handshakeDone_; }
  void asyncOpen(OpenHandler done) override;
  bool writableAfterFailedOpen() const override { return plainPeer_; }
  void asyncReadSome(boost::asio::mutable_buffer buffer, IoHandler done) override;
  void asyncWrite(boost::asio::const_buffer buffer, IoHandler done) override;
  std::size_t bytesWaiting() override;
  Status errorStatus(std::string_view what, const boost::system::error_code& error) const override;

 private:
  void onFirstByteReady(const boost::system::error_code& error, const OpenHandler& done);
  void handshake(OpenHandler done);

  // Declared first: the stream below refers to it.
  std::shared_ptr<boost::asio::ssl::context> context_;
  boost::asio::ssl::stream<boost::asio::ip::tcp::socket> stream_;
  const Role role_;
  SSL* const native_;   // stream_'s OpenSSL connection (Asio's accessor is not const)
  std::string remote_;  // "10.0.0.2:7001", for messages
  bool handshakeDone_ = false;
  bool plainPeer_ = false;  // server: the peer spoke plain TCP; writes bypass TLS
};

}  // namespace kvx::agent::channel
