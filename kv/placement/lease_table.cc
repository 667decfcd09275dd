#include "kv/placement/lease_table.h"

namespace kvx::kv::placement {

Status LeaseTable::grant(std::string id, Deadline expiry) {
  if (contains(id)) {
    return alreadyExists("request " + id + " already holds a block lease; renew it instead");
  }
  byExpiry_.emplace(expiry, id);
  expiries_.emplace(std::move(id), expiry);
  return Status::ok();
}

Status LeaseTable::renew(const std::string& id, Deadline expiry) {
  auto it = expiries_.find(id);
  if (it == expiries_.end()) {
    return notFound("request " + id +
                    " holds no block lease to renew (it expired, was revoked or was never "
                    "granted)");
  }
  auto node = byExpiry_.extract({it->second, id});
  node.value().first = expiry;
  byExpiry_.insert(std::move(node));
  it->second = expiry;
  return Status::ok();
}

bool LeaseTable::revoke(const std::string& id) {
  auto it = expiries_.find(id);
  if (it == expiries_.end()) return false;
  byExpiry_.erase({it->second, id});
  expiries_.erase(it);
  return true;
}

std::vector<std::string> LeaseTable::takeExpired(Clock::time_point now) {
  std::vector<std::string> expired;
  while (!byExpiry_.empty() && byExpiry_.begin()->first <= now) {
    auto node = byExpiry_.extract(byExpiry_.begin());
    expiries_.erase(node.value().second);
    expired.push_back(std::move(node.value().second));
  }
  return expired;
}

std::optional<Deadline> LeaseTable::nextExpiry() const {
  if (byExpiry_.empty()) return std::nullopt;
  return byExpiry_.begin()->first;
}

std::optional<Deadline> LeaseTable::expiryOf(const std::string& id) const {
  auto it = expiries_.find(id);
  if (it == expiries_.end()) return std::nullopt;
  return it->second;
}

}  // namespace kvx::kv::placement
