#pragma once

// WaitQueue: the requests that the placement scheduler told to wait for room, in arrival
// order, each with the deadline by which it must be placed. Bounded: a full queue refuses
// new requests, so an overloaded prefill agent sheds load at the door instead of timing out
// everything it holds. The caller retries queued requests in FIFO order when capacity
// appears (a peer report, a finished transfer) and fails the ones takeExpired() returns.
//
// A deadline has passed when deadline <= now. Ids are unique within the queue.
// Not thread-safe: owned by the agent's control strand. All operations are O(log n).

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kvx/status.h"
#include "kvx/transfer.h"

namespace kvx::kv::placement {

class WaitQueue {
 public:
  static constexpr std::size_t kDefaultCapacity = 1024;

  explicit WaitQueue(std::size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  // Appends `id`. ALREADY_EXISTS if it is queued; RESOURCE_EXHAUSTED when size() ==
  // capacity() ("placement queue full: 1024 requests waiting ...").
  Status push(std::string id, Deadline deadline);

  // Removes and returns every request whose deadline <= now, earliest deadline first (equal
  // deadlines in queue order).
  std::vector<std::string> takeExpired(Clock::time_point now);

  // Removes `id`; false if it is not queued.
  bool remove(const std::string& id);

  // The oldest request, or null when empty. The pointer is valid until the next mutation.
  const std::string* front() const;
  std::optional<std::string> popFront();

  // The earliest deadline of any queued request; nothing when empty.
  std::optional<Deadline> nextDeadline() const;

  bool contains(const std::string& id) const { return bySeq_.count(id) != 0; }

  // Every queued id, oldest first.
  std::vector<std::string> ids() const;

  std::size_t size() const { return entries_.size(); }
  std::size_t capacity() const { return capacity_; }
  bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    std::string id;
    Deadline deadline;
  };

  void erase(std::map<std::uint64_t, Entry>::iterator it);

  std::size_t capacity_;
  std::uint64_t nextSeq_ = 0;
  std::map<std::uint64_t, Entry> entries_;                  // by arrival sequence: FIFO order
  std::unordered_map<std::string, std::uint64_t> bySeq_;    // id -> sequence
  std::set<std::pair<Deadline, std::uint64_t>> deadlines_;  // (deadline, sequence)
};

}  // namespace kvx::kv::placement
