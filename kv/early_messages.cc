#include "kv/early_messages.h"

namespace kvx::kv {

bool EarlyMessages::hold(const std::string& peer, handoff::KvMessage message,
                         Clock::time_point now) {
  auto it = held_.find(peer);
  if (it == held_.end()) {
    if (held_.size() >= kMaxPeers) return false;
    it = held_.emplace(peer, Held{now, {}}).first;
  }
  if (it->second.messages.size() >= kMaxPerPeer) return false;
  it->second.messages.push_back(std::move(message));
  return true;
}

std::vector<handoff::KvMessage> EarlyMessages::take(const std::string& peer) {
  auto it = held_.find(peer);
  if (it == held_.end()) return {};
  std::vector<handoff::KvMessage> out = std::move(it->second.messages);
  held_.erase(it);
  return out;
}

std::vector<std::pair<std::string, std::size_t>> EarlyMessages::expire(Clock::time_point now) {
  std::vector<std::pair<std::string, std::size_t>> dropped;
  for (auto it = held_.begin(); it != held_.end();) {
    if (now - it->second.since > kHoldFor) {
      dropped.emplace_back(it->first, it->second.messages.size());
      it = held_.erase(it);
    } else {
      ++it;
    }
  }
  return dropped;
}

}  // namespace kvx::kv
