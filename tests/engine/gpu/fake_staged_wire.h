#pragma once

// FakeStagedWire: a StagedWire over host memory for the staged-pipeline tests. Sending, an
// operation copies the staged chunk into `remote` at its offset; receiving, it fills the chunk
// from `remote`. Operations run one at a time on a worker thread after a delay; they can be
// held (pause), failed by number, and observed as they start and end.

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <thread>

#include "engine/gpu/staged_pipeline.h"

namespace kvx::engine::gpu::testing {

class FakeStagedWire final : public StagedWire {
 public:
  struct Event {
    bool start = true;  // false: end
    std::uint64_t sequence = 0;
    std::uint64_t offset = 0;
    std::size_t length = 0;
  };

  FakeStagedWire(std::span<std::byte> remote, StagedDirection direction,
                 std::chrono::microseconds delay = {},
                 std::function<void(const Event&)> observer = {})
      : remote_(remote), direction_(direction), delay_(delay), observer_(std::move(observer)) {
    worker_ = std::thread([this] { run(); });
  }

  ~FakeStagedWire() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    worker_.join();
  }

  void postWire(std::byte* staging, std::uint64_t offset, std::size_t length,
                WireCallback done) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(Op{posted_++, staging, offset, length, std::move(done)});
    }
    wake_.notify_all();
  }

  void failOperation(std::uint64_t sequence, Status status) {
    std::lock_guard<std::mutex> lock(mutex_);
    faults_[sequence] = std::move(status);
  }
  void pause() {
    std::lock_guard<std::mutex> lock(mutex_);
    paused_ = true;
  }
  void resume() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      paused_ = false;
    }
    wake_.notify_all();
  }
  std::uint64_t posted() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return posted_;
  }
  std::uint64_t completed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return completed_;
  }

 private:
  struct Op {
    std::uint64_t sequence;
    std::byte* staging;
    std::uint64_t offset;
    std::size_t length;
    WireCallback done;
  };

  void run() {
    for (;;) {
      Op op;
      Status fault;
      std::deque<Op> left;
      bool stop = false;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || (!paused_ && !queue_.empty()); });
        if (stopping_) {
          stop = true;
          left.swap(queue_);
        } else {
          op = std::move(queue_.front());
          queue_.pop_front();
          if (auto it = faults_.find(op.sequence); it != faults_.end()) fault = it->second;
        }
      }
      if (stop) {
        for (Op& o : left) o.done(cancelled("fake wire stopped"));
        return;
      }
      if (observer_) observer_(Event{true, op.sequence, op.offset, op.length});
      if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
      if (fault.isOk()) {
        if (direction_ == StagedDirection::kDeviceToWire) {
          std::memcpy(remote_.data() + op.offset, op.staging, op.length);
        } else {
          std::memcpy(op.staging, remote_.data() + op.offset, op.length);
        }
      }
      if (observer_) observer_(Event{false, op.sequence, op.offset, op.length});
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++completed_;
      }
      op.done(fault);
    }
  }

  const std::span<std::byte> remote_;
  const StagedDirection direction_;
  const std::chrono::microseconds delay_;
  const std::function<void(const Event&)> observer_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Op> queue_;
  std::map<std::uint64_t, Status> faults_;
  std::uint64_t posted_ = 0;
  std::uint64_t completed_ = 0;
  bool paused_ = false;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace kvx::engine::gpu::testing
