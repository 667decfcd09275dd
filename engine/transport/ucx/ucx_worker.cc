#include "engine/transport/ucx/ucx_worker.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <thread>

#include "engine/transport/ucx/ucx_frame.h"
#include "engine/transport/ucx/ucx_status.h"

namespace kvx::engine::ucx {
namespace {

// Rounds of ucp_worker_progress per progress() call: enough to drain a burst of completions,
// few enough that one call never monopolises the lock.
constexpr int kProgressRounds = 16;
// How long progressUntil() sleeps, lock released, when UCX had nothing to do.
constexpr auto kIdleBackoff = std::chrono::microseconds(50);

std::atomic<std::uint64_t> nextWorkerSerial{1};

// The worker whose thread setup last succeeded on this thread (0: none).
thread_local std::uint64_t threadSetUpFor = 0;

}  // namespace

Result<std::shared_ptr<UcxWorker>> UcxWorker::create(std::shared_ptr<UcxContext> context,
                                                     std::string agentName) {
  std::shared_ptr<UcxWorker> worker(new UcxWorker(std::move(context), std::move(agentName)));
  KVX_RETURN_IF_ERROR(worker->init());
  return worker;
}

UcxWorker::UcxWorker(std::shared_ptr<UcxContext> context, std::string agentName)
    : context_(std::move(context)),
      agentName_(agentName),
      serial_(nextWorkerSerial.fetch_add(1)),
      receiver_(std::move(agentName)) {}

void UcxWorker::prepareThread() const {
  if (!threadSetup_ || threadSetUpFor == serial_) return;
  if (threadSetup_()) threadSetUpFor = serial_;
}

Status UcxWorker::init() {
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  ucs_status_t status = ucp_worker_create(context_->handle(), &params, &worker_);
  if (status != UCS_OK) {
    worker_ = nullptr;
    return fromUcs(status, "ucp_worker_create");
  }
  status = ucp_worker_get_efd(worker_, &eventFd_);
  if (status != UCS_OK) return fromUcs(status, "ucp_worker_get_efd");

  ucp_address_t* address = nullptr;
  std::size_t length = 0;
  status = ucp_worker_get_address(worker_, &address, &length);
  if (status != UCS_OK) return fromUcs(status, "ucp_worker_get_address");
  address_ = frame(kAddressMagic, std::span<const std::uint8_t>(
                                      reinterpret_cast<const std::uint8_t*>(address), length));
  ucp_worker_release_address(worker_, address);

  CallerLock lock(mutex_);  // not shared yet; taken so that receiver_ is only used under it
  return receiver_.install(worker_);
}

UcxWorker::~UcxWorker() {
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
}

bool UcxWorker::progress() {
  std::vector<std::pair<EndpointErrorHandler, Status>> errors;
  unsigned events = 0;
  {
    prepareThread();
    ProgressLock lock(mutex_);  // after any caller waiting for it
    for (int round = 0; round < kProgressRounds; ++round) {
      const unsigned n = ucp_worker_progress(worker_);
      events += n;
      if (n == 0) break;
    }
    errors.swap(deferredErrors_);
  }
  for (auto& [handler, status] : errors) {
    if (handler) handler(status);
  }
  return events > 0 || !errors.empty();
}

bool UcxWorker::arm() {
  prepareThread();
  ProgressLock lock(mutex_);  // after any caller waiting for it
  if (!deferredErrors_.empty()) return false;
  const ucs_status_t status = ucp_worker_arm(worker_);
  if (status == UCS_OK) return true;
  if (status != UCS_ERR_BUSY) {
    spdlog::warn("{}: {}", agentName_, fromUcs(status, "ucp_worker_arm").toString());
  }
  return false;
}

void UcxWorker::signal() {
  const ucs_status_t status = ucp_worker_signal(worker_);
  if (status != UCS_OK) {
    spdlog::warn("{}: {}", agentName_, fromUcs(status, "ucp_worker_signal").toString());
  }
}

void UcxWorker::setMessageHandler(MessageHandler handler) {
  Lock lock(*this);
  receiver_.setHandler(std::move(handler));
}

bool UcxWorker::progressUntil(const std::function<bool()>& done,
                              std::chrono::steady_clock::time_point deadline) {
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    if (ucp_worker_progress(worker_) == 0) {
      mutex_.unlock();
      std::this_thread::sleep_for(kIdleBackoff);
      mutex_.relock();
    }
  }
  return true;
}

void UcxWorker::deferErrorLocked(EndpointErrorHandler handler, Status status) {
  deferredErrors_.emplace_back(std::move(handler), std::move(status));
  // Wake a driver sleeping on the event fd so that the handler runs soon.
  ucp_worker_signal(worker_);
}

}  // namespace kvx::engine::ucx
