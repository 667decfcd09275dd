#pragma once

// TcpStream: a ByteStream that is a plain TCP socket; ready from the start. Threading and
// guarantees: byte_stream.h.

#include <boost/asio/ip/tcp.hpp>

#include "agent/channel/stream/byte_stream.h"

namespace kvx::agent::channel {

class TcpStream final : public ByteStream {
 public:
  // REQUIRES: `socket` is connected.
  explicit TcpStream(boost::asio::ip::tcp::socket socket);

  boost::asio::ip::tcp::socket& socket() override { return socket_; }
  bool ready() const override { return true; }
  void asyncOpen(OpenHandler done) override;
  bool writableAfterFailedOpen() const override { return true; }
  void asyncReadSome(boost::asio::mutable_buffer buffer, IoHandler done) override;
  void asyncWrite(boost::asio::const_buffer buffer, IoHandler done) override;
  std::size_t bytesWaiting() override;
  Status errorStatus(std::string_view what, const boost::system::error_code& error) const override;

 private:
  boost::asio::ip::tcp::socket socket_;
};

}  // namespace kvx::agent::channel
