#pragma once

// EarlyMessages: KV messages from a peer whose join this agent has not taken in yet, held
// until it does. The side that accepts a connection takes the peer in before it answers the
// handshake, and may address it at once (a decode agent tells its free blocks; a prefill
// agent places a queued request); the connecting side's own join event reaches its service
// thread only after the answer, so such a message can arrive first. It waits here and is
// handed back, in order, when the join is taken in. A peer that never joins does not hold
// memory for long: at most kMaxPerPeer messages for each of at most kMaxPeers peers, and
// what is not claimed within kHoldFor is dropped (expire).
//
// Thread: the KV service thread only.

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kv/handoff/kv_message.h"
#include "kvx/transfer.h"

namespace kvx::kv {

class EarlyMessages {
 public:
  static constexpr std::size_t kMaxPerPeer = 1024;
  static constexpr std::size_t kMaxPeers = 256;
  static constexpr std::chrono::seconds kHoldFor{10};

  // Holds `message` from `peer`; false (nothing held) at a limit.
  bool hold(const std::string& peer, handoff::KvMessage message, Clock::time_point now);
  // What `peer` sent before its join, oldest first; none are held for it afterwards.
  std::vector<handoff::KvMessage> take(const std::string& peer);
  // Drops what waited longer than kHoldFor at `now`: each peer's name and how many.
  std::vector<std::pair<std::string, std::size_t>> expire(Clock::time_point now);

 private:
  struct Held {
    Clock::time_point since;  // of the oldest
    std::vector<handoff::KvMessage> messages;
  };
  std::map<std::string, Held> held_;
};

}  // namespace kvx::kv
