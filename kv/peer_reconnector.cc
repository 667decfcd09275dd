#include "kv/peer_reconnector.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

namespace kvx::kv {

PeerReconnector::PeerReconnector(std::string agentName, ReconnectPolicy policy, ConnectFn connect,
                                 IsConnectedFn isConnected)
    : agentName_(std::move(agentName)),
      policy_(policy),
      connect_(std::move(connect)),
      isConnected_(std::move(isConnected)),
      thread_([this] { run(); }) {}

PeerReconnector::~PeerReconnector() {
  stop();
  if (thread_.joinable()) thread_.join();
}

void PeerReconnector::watch(const std::string& peer, const std::string& address) {
  sync::MutexLock lock(mutex_);
  if (!stopping_) addresses_[peer] = address;
}

void PeerReconnector::lost(const std::string& peer) {
  {
    sync::MutexLock lock(mutex_);
    if (stopping_ || !addresses_.contains(peer) || retries_.contains(peer)) return;
    const auto now = Clock::now();
    retries_.emplace(peer, Retry{now + policy_.firstDelay, policy_.firstDelay, now, now, 0});
    spdlog::info("{}: lost '{}'; dialing {} again", agentName_, peer, addresses_.at(peer));
  }
  wake_.notify_all();
}

void PeerReconnector::stop() {
  {
    sync::MutexLock lock(mutex_);
    stopping_ = true;
    retries_.clear();
  }
  wake_.notify_all();
}

std::uint64_t PeerReconnector::attempts() const {
  sync::MutexLock lock(mutex_);
  return attempts_;
}

void PeerReconnector::run() {
  sync::UniqueLock lock(mutex_);
  while (!stopping_) {
    if (retries_.empty()) {
      wake_.wait(lock.native(),
                 [&]() KVX_REQUIRES(mutex_) { return stopping_ || !retries_.empty(); });
      continue;
    }
    auto next =
        std::min_element(retries_.begin(), retries_.end(),
                         [](const auto& a, const auto& b) { return a.second.due < b.second.due; });
    // A copy: wait_until reads its deadline again after waking, when stop() or an attempt
    // may have erased the entry.
    const Clock::time_point due = next->second.due;
    if (Clock::now() < due) {
      wake_.wait_until(lock.native(), due);
      continue;
    }
    const std::string peer = next->first;
    const std::string address = addresses_.at(peer);
    ++attempts_;
    lock.unlock();
    attempt(peer, address);
    lock.lock();
  }
}

void PeerReconnector::attempt(const std::string& peer, const std::string& address) {
  std::string outcome;
  bool back = isConnected_(peer);
  if (!back) {
    Result<std::string> connected = connect_(address, deadlineIn(policy_.attemptTimeout));
    if (connected.isOk() && *connected != peer) {
      // Another agent answers at that address now: the peer we lost is not there.
      outcome = "found '" + *connected + "' at " + address + " instead";
    } else if (connected.isOk()) {
      back = true;
    } else {
      outcome = connected.status().toString();
    }
  }
  sync::MutexLock lock(mutex_);
  auto it = retries_.find(peer);
  if (it == retries_.end()) return;  // stopped meanwhile
  Retry& retry = it->second;
  ++retry.attempts;
  const auto now = Clock::now();
  if (back) {
    spdlog::info("{}: '{}' is connected again ({} attempt(s), {} ms after it was lost)", agentName_,
                 peer, retry.attempts,
                 std::chrono::duration_cast<std::chrono::milliseconds>(now - retry.since).count());
    retries_.erase(it);
    return;
  }
  spdlog::debug("{}: reconnecting to '{}' at {}: {}", agentName_, peer, address, outcome);
  if (now - retry.reportedAt >= policy_.reportEvery) {
    retry.reportedAt = now;
    spdlog::warn("{}: '{}' at {} still unreachable after {} attempt(s): {}", agentName_, peer,
                 address, retry.attempts, outcome);
  }
  retry.delay = std::min(policy_.maxDelay, retry.delay * 2);
  retry.due = now + retry.delay;
}

}  // namespace kvx::kv
