#pragma once

// LeaseTable: on the decode side, how long the blocks reserved for each request may stay
// reserved. A request that never completes (its prefill agent died or gave up) loses its
// blocks when its lease expires: the caller reclaims whatever takeExpired() returns.
// A lease has expired when expiry <= now. Keyed by request id; O(log n) operations.
//
// Not thread-safe: owned by the agent's control strand.

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kvx/status.h"
#include "kvx/transfer.h"

namespace kvx::kv::placement {

class LeaseTable {
 public:
  // ALREADY_EXISTS if `id` holds a lease (renew it instead).
  Status grant(std::string id, Deadline expiry);

  // Replaces the expiry of `id`'s lease (it may move earlier or later). NOT_FOUND if `id`
  // holds none: it expired, was revoked or was never granted.
  Status renew(const std::string& id, Deadline expiry);

  // Ends `id`'s lease (the request completed); false if it holds none.
  bool revoke(const std::string& id);

  // Removes and returns every lease with expiry <= now, oldest expiry first (equal expiries
  // in id order).
  std::vector<std::string> takeExpired(Clock::time_point now);

  // The earliest expiry of any lease; nothing when empty.
  std::optional<Deadline> nextExpiry() const;

  // The expiry of `id`'s lease, if it holds one.
  std::optional<Deadline> expiryOf(const std::string& id) const;

  bool contains(const std::string& id) const { return expiries_.count(id) != 0; }
  std::size_t size() const { return expiries_.size(); }
  bool empty() const { return expiries_.empty(); }

 private:
  std::unordered_map<std::string, Deadline> expiries_;   // id -> expiry
  std::set<std::pair<Deadline, std::string>> byExpiry_;  // (expiry, id)
};

}  // namespace kvx::kv::placement
