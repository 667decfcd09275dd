#include "agent/channel/stream/byte_stream.h"

#include <utility>

#include "agent/channel/stream/tcp_stream.h"
#include "agent/channel/stream/tls_stream.h"

namespace kvx::agent::channel {

std::unique_ptr<ByteStream> makeByteStream(boost::asio::ip::tcp::socket socket,
                                           std::shared_ptr<boost::asio::ssl::context> tls,
                                           bool server) {
  if (!tls) return std::make_unique<TcpStream>(std::move(socket));
  return std::make_unique<TlsStream>(std::move(socket), std::move(tls),
                                     server ? TlsStream::Role::kServer : TlsStream::Role::kClient);
}

}  // namespace kvx::agent::channel
