#pragma once

// RequestBoard: the published view of every request, written by the KV service thread on
// each change and read by callers: status queries, waits for a terminal state or for a
// layer, and the queue of arrivals (decode side) that nextArrival() hands out.
// Terminal entries are kept for the last `retainTerminal` requests.
//
// Thread safety: all members may be called from any thread.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kvx/kv_types.h"
#include "kvx/result.h"
#include "kvx/transfer.h"

namespace kvx::agent::handoff {

class RequestBoard {
 public:
  explicit RequestBoard(std::size_t retainTerminal = 65536) : retain_(retainTerminal) {}

  // Publishes a request's status; `layersDone` (decode side) may be empty.
  void publish(const KvRequestStatus& status, std::vector<bool> layersDone = {});
  void publishArrival(KvArrival arrival);
  // Drops an arrival nobody took yet (its request failed); true if it was there.
  bool withdrawArrival(const std::string& id);

  std::optional<KvRequestStatus> get(const std::string& id) const;
  // Waits until the request is terminal; NOT_FOUND if never published by the deadline is
  // not distinguishable from "not yet", so an unknown id waits until the deadline.
  Result<KvRequestStatus> waitTerminal(const std::string& id, Deadline deadline) const;
  Status waitLayer(const std::string& id, std::uint32_t layer, Deadline deadline) const;
  Result<KvArrival> nextArrival(Deadline deadline);
  // Wakes every waiter (shutdown); waits then return what they see.
  void wakeAll();

 private:
  struct Entry {
    KvRequestStatus status;
    std::vector<bool> layersDone;
  };

  const std::size_t retain_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::unordered_map<std::string, Entry> entries_;
  std::deque<std::string> terminalOrder_;
  std::deque<KvArrival> arrivals_;
};

}  // namespace kvx::agent::handoff
