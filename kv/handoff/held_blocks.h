#pragma once

// HeldBlocks: a decode agent's blocks of failed PUSH requests whose prefill agent was lost
// before it was done writing, kept out of the pool until no byte of that agent can land in
// them any more:
//   - a timer (`until`), where closing the lost agent's link already stops its writes (a
//     margin, KvAgentOptions::lostPushHold);
//   - and, for every lost agent that writes directly (peer_writer.h), proof that it stopped:
//     the same incarnation joined again and acknowledged an abort of its request (it answers
//     once its moves drained), or its process ended. No timer stands in for that proof: while
//     the agent lives and stays away, the blocks stay held (counted in heldBlocks, logged).
//
// Threads: the KV service thread only.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kv/handoff/peer_writer.h"
#include "kv/pool/block_extent.h"
#include "kvx/transfer.h"

namespace kvx::kv::handoff {

// A lost prefill agent that may still copy into a held request's blocks.
struct LostWriter {
  std::string peer;
  std::string request;  // its id for the request (the part's key)
  PeerWriter writer;
  bool abortSent = false;     // to its current session; an acknowledgement is awaited
  std::uint64_t attempt = 0;  // of its request (PlaceMsg::attempt), named in the abort
};

// An abort a rejoined writer is to be asked.
struct HeldAbort {
  std::string request;
  std::uint64_t attempt = 0;
  bool operator==(const HeldAbort&) const = default;
};

class HeldBlocks {
 public:
  struct Released {
    std::string id;  // the request (group) id
    std::vector<kv::BlockExtent> extents;
  };

  void hold(std::string id, std::vector<kv::BlockExtent> extents, Clock::time_point until,
            std::vector<LostWriter> writers);

  // `peer` joined again at `incarnation`: the requests each of its held writers of that
  // incarnation must be asked to abort (each once per session).
  std::vector<HeldAbort> rejoined(const std::string& peer, std::uint64_t incarnation);
  // `peer` was lost again: aborts sent to it went unanswered; its next join asks again.
  void lost(const std::string& peer);
  // `peer` acknowledged the abort of `request` (submission `attempt`; 0 when it did not say):
  // none of its writes for it can land any more. True if it was a held writer.
  bool acknowledged(const std::string& peer, const std::string& request, std::uint64_t attempt);

  // `peer`, at `incarnation`, placed `request` again: it is done with the earlier one of that
  // id. True if such a writer was held.
  bool superseded(const std::string& peer, const std::string& request, std::uint64_t incarnation);

  // Takes out every entry whose timer ran out by `now` and whose writers have all stopped
  // (acknowledged, or their process ended); all of them with Clock::time_point::max() (at
  // shutdown, where the pool goes away with this agent).
  std::vector<Released> takeReleasable(Clock::time_point now);

  std::uint64_t blocks() const;
  // The lost agents that may still write into held blocks.
  std::vector<std::string> writers() const;
  // The blocks held for requests `peer` may still write into.
  std::uint64_t blocksOf(const std::string& peer) const;
  // The operator gave up on `peer` (KvAgent::giveBackHeldBlocks): no block waits for proof
  // that it stopped any more (the timers still run). Returns the blocks that waited for it.
  std::uint64_t forgetWriter(const std::string& peer);
  bool empty() const { return held_.empty(); }

 private:
  struct Entry {
    std::string id;
    std::vector<kv::BlockExtent> extents;
    Clock::time_point until;
    std::vector<LostWriter> writers;  // not yet proven stopped
  };
  std::vector<Entry> held_;
};

}  // namespace kvx::kv::handoff
