#pragma once

// Peer events: an agent tells its user when a peer joins and when it leaves, with the peer's
// incarnation (a random number each agent draws at start-up), so that a peer restarted under
// the same name is never mistaken for the one that left.

#include <cstdint>
#include <functional>
#include <string>

#include "kvx/status.h"

// Declarations here are libkvx.so's exports (api/shared_library/).
#pragma GCC visibility push(default)
namespace kvx {

struct PeerEvent {
  enum class Kind : std::uint8_t {
    kJoined = 0,  // its metadata was accepted; transfers to it may start
    kLeft = 1,    // it disconnected, failed, timed out or restarted; `why` says which
  };
  Kind kind = Kind::kJoined;
  std::string peer;
  std::uint64_t incarnation = 0;
  // kLeft: the Status its pending transfers failed with (PEER_FAILED, or CANCELLED after a
  // local disconnect). OK for kJoined.
  Status why;
};

// Receives peer events (see Agent::setPeerEventHandler).
using PeerEventHandler = std::function<void(const PeerEvent&)>;

inline const char* toString(PeerEvent::Kind kind) {
  return kind == PeerEvent::Kind::kJoined ? "joined" : "left";
}

}  // namespace kvx
#pragma GCC visibility pop
