#pragma once

// AgentEntry: what one agent publishes about itself in the registry (the value of key
// <cluster prefix><name>, JSON): its name, role, incarnation, control address, pool, data
// path and devices. Parsing checks every field: an entry that is not kvx's, is truncated,
// sits under another agent's name or holds absurd values is refused with an error naming
// the key, so that a watcher can ignore it with one warning. Stateless.

#include <cstdint>
#include <string>

#include "kvx/result.h"

namespace kvx::registry {

struct AgentEntry {
  std::string name;
  std::string role;  // "prefill" or "decode"
  std::uint64_t incarnation = 0;
  std::string control;       // host:port of its control channel, reachable by its peers
  std::string model;         // its pool's model
  std::uint64_t blocks = 0;  // its pool's blocks
  std::string memory;        // "host" or "cuda"
  std::string transport;     // its data path ("tcp", "shm", "socket", ...)
  std::string devices;       // its data path's devices, as configured ("auto", "eth0", ...)

  std::string toJson() const;
};

// The entry under `key` (which must end in its name) of `prefix`; INVALID_ARGUMENT naming
// the key and the fault otherwise. Values above 64 KiB are refused unread.
Result<AgentEntry> parseAgentEntry(const std::string& prefix, const std::string& key,
                                   const std::string& value);

}  // namespace kvx::registry
