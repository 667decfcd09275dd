#include "engine/transport/transport_registry.h"

#include "engine/transport/inproc/inproc_transport_factory.h"
#include "engine/transport/socket/socket_transport_factory.h"
#include "engine/transport/ucx/ucx_transport_factory.h"

namespace kvx::engine {

Result<std::unique_ptr<Transport>> createTransport(std::string_view name,
                                                   const TransportOptions& options) {
  if (name == "ucx") return ucx::createUcxTransport(options);
  if (name == "socket") return socket::createSocketTransport(options);
  if (name == "inproc") return inproc::createInprocTransport(options);
  std::string known;
  for (const std::string& n : availableTransports()) known += (known.empty() ? "" : ", ") + n;
  return notFound("unknown transport '" + std::string(name) + "' (available: " + known + ")");
}

std::vector<std::string> availableTransports() { return {"ucx", "socket", "inproc"}; }

}  // namespace kvx::engine
