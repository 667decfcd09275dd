#include "kv/handoff/request_board.h"

#include <algorithm>

namespace kvx::kv::handoff {

template <typename Predicate>
bool RequestBoard::waitOn(sync::UniqueLock& lock, const std::string& id, Deadline deadline,
                          Predicate done) const {
  std::shared_ptr<Waiters>& slot = waiters_[id];
  if (slot == nullptr) slot = std::make_shared<Waiters>();
  std::shared_ptr<Waiters> waiters = slot;  // the map may rehash while this waits
  ++waiters->count;
  const bool met = waiters->changed.wait_until(lock.native(), deadline, done);
  if (--waiters->count == 0) waiters_.erase(id);
  return met;
}

void RequestBoard::publish(const KvRequestStatus& status, std::vector<bool> layersDone) {
  std::shared_ptr<Waiters> waiting;
  {
    sync::MutexLock lock(mutex_);
    auto [it, inserted] = entries_.try_emplace(status.id);
    const bool wasTerminal = !inserted && isTerminal(it->second.status.state);
    it->second.status = status;
    if (!layersDone.empty()) it->second.layersDone = std::move(layersDone);
    if (isTerminal(status.state) && !wasTerminal) {
      terminalOrder_.push_back(status.id);
      while (terminalOrder_.size() > retain_) {
        auto old = entries_.find(terminalOrder_.front());
        if (old != entries_.end() && isTerminal(old->second.status.state)) entries_.erase(old);
        terminalOrder_.pop_front();
      }
    }
    auto w = waiters_.find(status.id);
    if (w != waiters_.end()) waiting = w->second;
  }
  if (waiting != nullptr) waiting->changed.notify_all();
}

void RequestBoard::publishArrival(KvArrival arrival) {
  {
    sync::MutexLock lock(mutex_);
    arrivals_.push_back(std::move(arrival));
  }
  arrived_.notify_one();
}

bool RequestBoard::withdrawArrival(const std::string& id) {
  sync::MutexLock lock(mutex_);
  auto it = std::find_if(arrivals_.begin(), arrivals_.end(),
                         [&](const KvArrival& a) { return a.id == id; });
  if (it == arrivals_.end()) return false;
  arrivals_.erase(it);
  return true;
}

std::optional<KvRequestStatus> RequestBoard::get(const std::string& id) const {
  sync::MutexLock lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  return it->second.status;
}

Result<KvRequestStatus> RequestBoard::waitTerminal(const std::string& id, Deadline deadline) const {
  sync::UniqueLock lock(mutex_);
  auto isDone = [&]() KVX_REQUIRES(mutex_) {
    auto it = entries_.find(id);
    return it != entries_.end() && isTerminal(it->second.status.state);
  };
  auto terminal = [&]() KVX_REQUIRES(mutex_) { return isDone() || waitsCancelled_.has_value(); };
  if (!waitOn(lock, id, deadline, terminal)) {
    auto it = entries_.find(id);
    if (it == entries_.end()) return notFound("request '" + id + "' is not known");
    return timedOut("request '" + id + "' is still " +
                    std::string(toString(it->second.status.state)) + " at the deadline");
  }
  if (!isDone()) return *waitsCancelled_;
  return entries_.at(id).status;
}

Status RequestBoard::waitLayer(const std::string& id, std::uint32_t layer,
                               Deadline deadline) const {
  sync::UniqueLock lock(mutex_);
  Status outcome = timedOut("layer " + std::to_string(layer) + " of request '" + id +
                            "' was not in place by the deadline");
  auto ready = [&]() KVX_REQUIRES(mutex_) {
    if (auto it = entries_.find(id); it != entries_.end()) {
      const Entry& e = it->second;
      if (e.status.state == KvRequestState::kFailed) {
        outcome = e.status.status;
        return true;
      }
      if ((layer < e.layersDone.size() && e.layersDone[layer]) ||
          e.status.state == KvRequestState::kComplete ||
          e.status.state == KvRequestState::kConsumed) {
        outcome = Status::ok();
        return true;
      }
    }
    if (waitsCancelled_) {
      outcome = *waitsCancelled_;
      return true;
    }
    return false;
  };
  waitOn(lock, id, deadline, ready);
  return outcome;
}

Result<KvArrival> RequestBoard::nextArrival(Deadline deadline) {
  sync::UniqueLock lock(mutex_);
  if (!arrived_.wait_until(lock.native(), deadline, [&]() KVX_REQUIRES(mutex_) {
        return !arrivals_.empty() || closed_.has_value() || waitsCancelled_.has_value();
      })) {
    return timedOut("no request arrived before the deadline");
  }
  if (waitsCancelled_) return *waitsCancelled_;
  if (arrivals_.empty()) return *closed_;
  KvArrival out = std::move(arrivals_.front());
  arrivals_.pop_front();
  return out;
}

void RequestBoard::close(Status why) {
  {
    sync::MutexLock lock(mutex_);
    closed_ = std::move(why);
  }
  wakeAll();
}

void RequestBoard::cancelWaits(Status why) {
  {
    sync::MutexLock lock(mutex_);
    waitsCancelled_ = std::move(why);
  }
  wakeAll();
}

void RequestBoard::wakeAll() {
  std::vector<std::shared_ptr<Waiters>> all;
  {
    sync::MutexLock lock(mutex_);
    for (const auto& [id, waiters] : waiters_) all.push_back(waiters);
  }
  for (const auto& waiters : all) waiters->changed.notify_all();
  arrived_.notify_all();
}

}  // namespace kvx::kv::handoff
