#include "engine/peer/link_reopener.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace kvx::engine {

LinkReopener::~LinkReopener() { stop(); }

void LinkReopener::reopen(std::shared_ptr<RemotePeer> peer) {
  {
    sync::MutexLock lock(mutex_);
    if (!stopping_) {
      queue_.push_back(std::move(peer));
      if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
      wake_.notify_one();
      return;
    }
  }
  peer->finishReset().ignore();
}

void LinkReopener::stop() {
  std::thread thread;
  {
    sync::MutexLock lock(mutex_);
    stopping_ = true;
    stopRequested_.store(true);
    thread = std::move(thread_);
  }
  wake_.notify_one();
  if (thread.joinable()) thread.join();
}

void LinkReopener::run() {
  sync::UniqueLock lock(mutex_);
  while (true) {
    wake_.wait(lock.native(),
               [this]() KVX_REQUIRES(mutex_) { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, with nothing left
    std::shared_ptr<RemotePeer> peer = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    awaitGate(*peer);
    // Its outcome reaches the peer's users through the link, or the peer's failure.
    peer->finishReset().ignore();
    peer.reset();
    lock.lock();
  }
}

void LinkReopener::awaitGate(const RemotePeer& peer) {
  if (!gate_) return;
  const Clock::time_point since = peer.resetStarted();
  const bool heard = gate_.wait(peer.name(), since, [this, &peer] {
    return stopRequested_.load() || !peer.failure().isOk();
  });
  if (heard || !peer.failure().isOk() || stopRequested_.load()) return;
  spdlog::warn(
      "peer '{}': not heard from in the {} ms since its data path reset began; "
      "opening the new endpoint anyway",
      peer.name(),
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count());
}

}  // namespace kvx::engine
