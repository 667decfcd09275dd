#pragma once

// TransferTable: the transfers of one engine by id, the queue of transfers that completions
// flagged for attention, and the wait for a transfer to finish.
//
// Thread safety: all members may be called from any thread. needsAttention() is called from
// completion context and only queues; pump() does the work on the progress thread (or the
// caller's, in caller-driven mode).

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>

#include "engine/transfer/transfer.h"
#include "sync/mutex.h"

namespace kvx::engine {

class TransferTable final : public TransferListener {
 public:
  TransferId nextId();
  void insert(std::shared_ptr<Transfer> transfer);
  Result<std::shared_ptr<Transfer>> find(TransferId id) const;
  // Removes a transfer that is not pending.
  Status erase(TransferId id);
  // All transfers (for close and peer failure).
  std::vector<std::shared_ptr<Transfer>> all() const;

  // Advances every transfer flagged since the last call. Returns true if there was any.
  bool pump();

  // Waits until `transfer` is no longer pending or the deadline passes.
  bool waitFinished(const Transfer& transfer, Deadline deadline);

  // Who wakes the progress driver for needsAttentionWoken (null: the caller drives progress).
  // Set once, before transfers are made; it must stay callable while any transfer runs.
  void setWake(std::function<void()> wake) { wake_ = std::move(wake); }

  void needsAttention(std::shared_ptr<Transfer> transfer) override;
  void needsAttentionWoken(std::shared_ptr<Transfer> transfer) override;
  void finished(Transfer& transfer) override;

 private:
  mutable sync::Mutex mutex_;
  std::unordered_map<TransferId, std::shared_ptr<Transfer>> transfers_ KVX_GUARDED_BY(mutex_);

  sync::Mutex attentionMutex_;  // leaf lock, taken in completion context
  std::deque<std::shared_ptr<Transfer>> attention_ KVX_GUARDED_BY(attentionMutex_);

  std::function<void()> wake_;

  // Guards no data: taken by finished() to order a state change before a waiter's check.
  sync::Mutex finishedMutex_;
  std::condition_variable finishedCv_;
};

}  // namespace kvx::engine
