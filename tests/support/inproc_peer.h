#pragma once

// An in-process transport for engine-part tests, and the metadata by which another part
// takes it in as a peer.

#include <cstdint>
#include <memory>
#include <string>

#include "engine/peer/peer_metadata.h"
#include "engine/transport/transport_registry.h"

namespace kvx::test {

inline std::unique_ptr<engine::Transport> inprocTransport(const std::string& agentName) {
  engine::TransportOptions options;
  options.agentName = agentName;
  return std::move(engine::createTransport("inproc", options).value());
}

// `transport`'s address, as agent `name` of `incarnation` would publish it.
inline engine::PeerMetadata peerMetadata(const std::string& name, std::uint64_t incarnation,
                                         const engine::Transport& transport) {
  engine::PeerMetadata metadata;
  metadata.name = name;
  metadata.incarnation = incarnation;
  metadata.transport = std::string(transport.name());
  metadata.dataAddress = transport.localAddress();
  return metadata;
}

}  // namespace kvx::test
