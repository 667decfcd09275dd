#pragma once

// PeerFairQueue: requests of several peers waiting for one resource (the staging window's
// slots), served round-robin across peers and in arrival order within a peer. A peer that
// queued many requests gets one turn in each round, not the whole resource, so a window
// sized for one busy peer still serves a second one within a round of turns.
//
// Thread safety: none (the WindowServer's pump lock guards it).

#include <cstddef>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>

namespace kvx::engine {

template <typename T>
class PeerFairQueue {
 public:
  // Adds `item` behind the peer's earlier ones.
  void push(const std::string& peer, T item) {
    std::deque<T>& queue = items_[peer];
    if (queue.empty()) turns_.push_back(peer);
    queue.push_back(std::move(item));
    ++size_;
  }

  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  std::size_t sizeOf(const std::string& peer) const {
    auto it = items_.find(peer);
    return it == items_.end() ? 0 : it->second.size();
  }

  // The item whose turn it is: the oldest of the peer whose turn it is. REQUIRES: !empty().
  T& front() { return items_.at(turns_.front()).front(); }
  const std::string& frontPeer() const { return turns_.front(); }

  // Removes front(); the turn passes to the next peer that has items. REQUIRES: !empty().
  void pop() {
    std::string peer = std::move(turns_.front());
    turns_.pop_front();
    auto it = items_.find(peer);
    it->second.pop_front();
    --size_;
    if (it->second.empty()) {
      items_.erase(it);
    } else {
      turns_.push_back(std::move(peer));
    }
  }

  // Drops every item of `peer`.
  void eraseOf(const std::string& peer) {
    auto it = items_.find(peer);
    if (it == items_.end()) return;
    size_ -= it->second.size();
    items_.erase(it);
    std::erase(turns_, peer);
  }

 private:
  std::deque<std::string> turns_;  // peers with items; the front one is served next
  std::unordered_map<std::string, std::deque<T>> items_;
  std::size_t size_ = 0;
};

}  // namespace kvx::engine
