#include "kv/placement/wait_queue.h"

namespace kvx::kv::placement {

Status WaitQueue::push(std::string id, Deadline deadline) {
  if (contains(id)) return alreadyExists("request " + id + " is already waiting for placement");
  if (entries_.size() >= capacity_) {
    return resourceExhausted("placement queue full: " + std::to_string(entries_.size()) +
                             " requests waiting; request " + id +
                             " was not queued (retry later or raise the queue capacity)");
  }
  const std::uint64_t seq = nextSeq_++;
  bySeq_.emplace(id, seq);
  deadlines_.emplace(deadline, seq);
  entries_.emplace(seq, Entry{std::move(id), deadline});
  return Status::ok();
}

void WaitQueue::erase(std::map<std::uint64_t, Entry>::iterator it) {
  deadlines_.erase({it->second.deadline, it->first});
  bySeq_.erase(it->second.id);
  entries_.erase(it);
}

std::vector<std::string> WaitQueue::takeExpired(Clock::time_point now) {
  std::vector<std::string> expired;
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    auto it = entries_.find(deadlines_.begin()->second);
    expired.push_back(std::move(it->second.id));
    deadlines_.erase(deadlines_.begin());
    bySeq_.erase(expired.back());
    entries_.erase(it);
  }
  return expired;
}

bool WaitQueue::remove(const std::string& id) {
  auto found = bySeq_.find(id);
  if (found == bySeq_.end()) return false;
  erase(entries_.find(found->second));
  return true;
}

const std::string* WaitQueue::front() const {
  return entries_.empty() ? nullptr : &entries_.begin()->second.id;
}

std::optional<std::string> WaitQueue::popFront() {
  if (entries_.empty()) return std::nullopt;
  auto it = entries_.begin();
  std::string id = it->second.id;
  erase(it);
  return id;
}

std::optional<Deadline> WaitQueue::nextDeadline() const {
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.begin()->first;
}

std::vector<std::string> WaitQueue::ids() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& [seq, entry] : entries_) out.push_back(entry.id);
  return out;
}

}  // namespace kvx::kv::placement
