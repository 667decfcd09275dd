#pragma once

// RegionAccess: where a checked request may touch a registered region (SocketTransport's
// accessLocked hands it to the inbound connection that places or reads the bytes).

#include <cstdint>

namespace kvx::engine::socket {

struct RegionAccess {
  std::uint8_t* address = nullptr;
  int device = -1;  // the GPU whose memory `address` is; -1: host memory
};

}  // namespace kvx::engine::socket
