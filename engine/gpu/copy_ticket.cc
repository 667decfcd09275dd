#include "engine/gpu/copy_ticket.h"

namespace kvx::engine::gpu {

std::shared_ptr<CopyTicket> CopyTicket::start(CopyEngine& engine, const CopyRequest& request) {
  auto ticket = std::make_shared<CopyTicket>();
  ticket->what_ = gpu::describe(request);
  engine.copy(request, [ticket](Status status) { ticket->complete(std::move(status)); });
  return ticket;
}

bool CopyTicket::ready() const {
  sync::MutexLock lock(mutex_);
  return outcome_.has_value();
}

Status CopyTicket::wait(std::chrono::steady_clock::time_point deadline) const {
  sync::UniqueLock lock(mutex_);
  if (!completed_.wait_until(lock.native(), deadline,
                             [&]() KVX_REQUIRES(mutex_) { return outcome_.has_value(); })) {
    return timedOut("copy (" + what_ + ") did not complete by its deadline");
  }
  return *outcome_;
}

void CopyTicket::complete(Status status) {
  {
    sync::MutexLock lock(mutex_);
    outcome_ = std::move(status);
  }
  completed_.notify_all();
}

}  // namespace kvx::engine::gpu
