#include "engine/transfer/transfer_table.h"

#include "sync/process_counter.h"

namespace kvx::engine {
namespace {

Status unknownTransfer(TransferId id) {
  return notFound("transfer " + std::to_string(id.value) + " does not exist (or was released)");
}

}  // namespace

TransferId TransferTable::nextId() { return TransferId(sync::nextInProcess<TransferId>()); }

void TransferTable::insert(std::shared_ptr<Transfer> transfer) {
  sync::MutexLock lock(mutex_);
  transfers_.emplace(transfer->id(), std::move(transfer));
}

Result<std::shared_ptr<Transfer>> TransferTable::find(TransferId id) const {
  sync::MutexLock lock(mutex_);
  auto it = transfers_.find(id);
  if (it == transfers_.end()) return unknownTransfer(id);
  return it->second;
}

Status TransferTable::erase(TransferId id) {
  sync::MutexLock lock(mutex_);
  auto it = transfers_.find(id);
  if (it == transfers_.end()) return unknownTransfer(id);
  if (it->second->pending()) {
    return failedPrecondition("transfer " + std::to_string(id.value) + " is still pending");
  }
  transfers_.erase(it);
  return Status::ok();
}

std::vector<std::shared_ptr<Transfer>> TransferTable::all() const {
  sync::MutexLock lock(mutex_);
  std::vector<std::shared_ptr<Transfer>> out;
  out.reserve(transfers_.size());
  for (const auto& [id, t] : transfers_) out.push_back(t);
  return out;
}

bool TransferTable::pump() {
  std::deque<std::shared_ptr<Transfer>> batch;
  {
    sync::MutexLock lock(attentionMutex_);
    batch.swap(attention_);
  }
  // Completions queue a transfer once each; advancing it once per batch is enough.
  const Transfer* previous = nullptr;
  for (auto& transfer : batch) {
    if (transfer.get() == previous) continue;
    previous = transfer.get();
    transfer->advance();
  }
  return !batch.empty();
}

bool TransferTable::waitFinished(const Transfer& transfer, Deadline deadline) {
  sync::UniqueLock lock(finishedMutex_);
  return finishedCv_.wait_until(lock.native(), deadline, [&] { return !transfer.pending(); });
}

void TransferTable::needsAttention(std::shared_ptr<Transfer> transfer) {
  // Always queue (never drop the reference here): the last reference to a transfer must not
  // be released in completion context, where the transport's lock is held.
  sync::MutexLock lock(attentionMutex_);
  attention_.push_back(std::move(transfer));
}

void TransferTable::needsAttentionWoken(std::shared_ptr<Transfer> transfer) {
  needsAttention(std::move(transfer));
  if (wake_) wake_();
}

void TransferTable::finished(Transfer& /*transfer*/) {
  // Taking the mutex orders the state change before a waiter's predicate check.
  { sync::MutexLock lock(finishedMutex_); }
  finishedCv_.notify_all();
}

}  // namespace kvx::engine
