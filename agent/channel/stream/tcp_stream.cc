#include "agent/channel/stream/tcp_stream.h"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <utility>

#include "agent/channel/asio_status.h"

namespace kvx::agent::channel {

TcpStream::TcpStream(boost::asio::ip::tcp::socket socket) : socket_(std::move(socket)) {}

void TcpStream::asyncOpen(OpenHandler done) {
  // Never needed (ready() from the start); kept total so that a caller cannot hang on it.
  boost::asio::post(socket_.get_executor(), [done = std::move(done)] { done(Status::ok()); });
}

void TcpStream::asyncReadSome(boost::asio::mutable_buffer buffer, IoHandler done) {
  socket_.async_read_some(buffer, std::move(done));
}

void TcpStream::asyncWrite(boost::asio::const_buffer buffer, IoHandler done) {
  boost::asio::async_write(socket_, buffer, std::move(done));
}

std::size_t TcpStream::bytesWaiting() {
  boost::system::error_code error;
  const std::size_t bytes = socket_.available(error);
  return error ? 0 : bytes;
}

Status TcpStream::errorStatus(std::string_view what, const boost::system::error_code& error) const {
  return asioStatus(StatusCode::kPeerFailed, what, error);
}

}  // namespace kvx::agent::channel
