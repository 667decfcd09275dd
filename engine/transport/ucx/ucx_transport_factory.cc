// TEMPORARY: replaced by the real UCX backend (ucx_transport.cc) as it lands.
#include "engine/transport/ucx/ucx_transport_factory.h"

namespace kvx::engine::ucx {

Result<std::unique_ptr<Transport>> createUcxTransport(const TransportOptions&) {
  return unimplemented("UCX transport not built yet");
}

}  // namespace kvx::engine::ucx
