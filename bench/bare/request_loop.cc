#include "bench/bare/request_loop.h"

#include <time.h>

#include <cstring>
#include <mutex>

#include "bench/bare/target_protocol.h"
#include "engine/transport/ucx/ucx_status.h"

namespace kvx::bench {

using engine::ucx::fromUcs;
using engine::ucx::isError;
using engine::ucx::isRequest;
using engine::ucx::statusOf;

std::int64_t monotonicNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

namespace {

// Iterations of the loop between clock reads for the deadline and the health check.
constexpr unsigned kCheckEvery = 256;
constexpr std::int64_t kHealthCheckNs = 5'000'000;

}  // namespace

RequestLoop::RequestLoop(BareUcpNode& node, const BareUcpOptions& options, std::uint64_t remoteBase,
                         std::vector<std::uint8_t>& touched, std::function<Status()> healthCheck)
    : node_(node),
      options_(options),
      remoteBase_(remoteBase),
      touched_(touched),
      healthCheck_(std::move(healthCheck)),
      slots_(options.pattern, options.slotCount(), options.segments, options.seed),
      segmentSlots_(options.segments),
      inFlight_(std::make_unique<InFlight[]>(options.window)) {
  for (std::uint32_t i = 0; i < options.window; ++i) {
    inFlight_[i].loop = this;
    free_.push_back(&inFlight_[i]);
  }
  ready_.reserve(2 * std::size_t{options.window});
}

RequestLoop::~RequestLoop() {
  if (options_.fixedOverhead) {
    ucp_am_handler_param_t am{};
    am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB;
    am.id = kAckAmId;
    am.cb = nullptr;
    (void)ucp_worker_set_am_recv_handler(node_.worker(), &am);
  }
  bool owned = false;
  for (std::uint32_t i = 0; i < options_.window; ++i) {
    owned = owned || inFlight_[i].ucxOwned;
    inFlight_[i].loop = nullptr;
  }
  if (!owned) return;
  // Late callbacks may still use the records (see the header): keep them until exit.
  static std::mutex mutex;
  static std::vector<std::unique_ptr<InFlight[]>> detached;
  std::lock_guard<std::mutex> lock(mutex);
  detached.push_back(std::move(inFlight_));
}

void RequestLoop::onFlush(void* request, ucs_status_t status, void* userData) {
  auto* r = static_cast<InFlight*>(userData);
  ucp_request_free(request);
  r->ucxOwned = false;
  if (r->loop == nullptr) return;
  const std::int64_t now = monotonicNs();
  // figures_ is null only when a failed run's endpoint is being closed.
  if (r->loop->figures_ != nullptr) {
    r->loop->figures_->initiator.add(std::chrono::nanoseconds(now - r->postNs));
  }
  r->flushed = true;
  if (status != UCS_OK) r->error = status;
  r->loop->ready_.push_back(r);
}

void RequestLoop::onAmSent(void* request, ucs_status_t status, void* userData) {
  auto* r = static_cast<InFlight*>(userData);
  ucp_request_free(request);
  r->ucxOwned = false;
  if (r->loop == nullptr) return;
  r->amDone = true;
  if (status != UCS_OK) r->error = status;
  r->loop->ready_.push_back(r);
}

ucs_status_t RequestLoop::onAck(void* arg, const void* header, std::size_t headerLength, void*,
                                std::size_t, const ucp_am_recv_param_t*) {
  auto* loop = static_cast<RequestLoop*>(arg);
  std::uint64_t id = 0;
  if (headerLength != sizeof(id)) return UCS_OK;
  std::memcpy(&id, header, sizeof(id));
  for (std::uint32_t i = 0; i < loop->options_.window; ++i) {
    InFlight& r = loop->inFlight_[i];
    if (r.id == id && !r.retired) {
      r.acknowledged = true;
      loop->ready_.push_back(&r);
    }
  }
  return UCS_OK;
}

Status RequestLoop::post(InFlight& r) {
  r = InFlight{};
  r.loop = this;
  r.id = nextId_++;
  slots_.next(segmentSlots_);
  const std::uint64_t s = options_.segmentBytes;
  ucp_request_param_t opParam = node_.rmaParam();  // no callback: the flush reports completion
  ucp_ep_h ep = node_.endpoint();
  r.postNs = monotonicNs();
  figures_->postNs.push_back(r.postNs);
  for (const std::uint64_t slot : segmentSlots_) {
    touched_[slot] = 1;
    if (options_.skipData) continue;
    std::uint8_t* local = node_.buffer() + slot * s;
    const std::uint64_t remote = remoteBase_ + slot * s;
    const ucs_status_ptr_t op =
        options_.op == BareOp::kPut
            ? ucp_put_nbx(ep, local, s, remote, node_.remoteKey(), &opParam)
            : ucp_get_nbx(ep, local, s, remote, node_.remoteKey(), &opParam);
    if (isRequest(op)) {
      ucp_request_free(op);  // completes in the background; the flush waits for it
    } else if (isError(op)) {
      return fromUcs(statusOf(op),
                     std::string(options_.op == BareOp::kPut ? "ucp_put_nbx" : "ucp_get_nbx") +
                         " of " + std::to_string(s) + " bytes, slot " + std::to_string(slot) +
                         ", request " + std::to_string(r.id));
    }
  }
  ucp_request_param_t flushParam{};
  flushParam.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  flushParam.cb.send = &RequestLoop::onFlush;
  flushParam.user_data = &r;
  const ucs_status_ptr_t flush = ucp_ep_flush_nbx(ep, &flushParam);
  if (isError(flush)) {
    return fromUcs(statusOf(flush), "ucp_ep_flush_nbx of request " + std::to_string(r.id));
  }
  if (isRequest(flush)) {
    r.ucxOwned = true;
  } else {
    figures_->initiator.add(std::chrono::nanoseconds(monotonicNs() - r.postNs));
    r.flushed = true;
    ready_.push_back(&r);
  }
  return Status::ok();
}

Status RequestLoop::advance(InFlight& r) {
  if (r.error != UCS_OK) return fromUcs(r.error, "request " + std::to_string(r.id));
  if (r.retired || !r.flushed) return Status::ok();
  if (options_.notifies() && !r.notified) {
    r.notified = true;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = &RequestLoop::onAmSent;
    param.user_data = &r;
    const ucs_status_ptr_t am =
        ucp_am_send_nbx(node_.endpoint(), kNotifyAmId, &r.id, sizeof(r.id), nullptr, 0, &param);
    if (isError(am)) {
      return fromUcs(statusOf(am), "ucp_am_send_nbx of request " + std::to_string(r.id));
    }
    if (isRequest(am)) {
      r.ucxOwned = true;
      return Status::ok();
    }
    r.amDone = true;
  }
  if (options_.notifies() && !r.amDone) return Status::ok();
  if (options_.fixedOverhead && !r.acknowledged) return Status::ok();
  r.retired = true;
  ++figures_->requests;
  figures_->lastRetireNs = monotonicNs();
  free_.push_back(&r);
  return Status::ok();
}

Result<LoopFigures> RequestLoop::run(const LoopRun& run, Deadline deadline) {
  if (options_.fixedOverhead) {
    ucp_am_handler_param_t am{};
    am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                    UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
    am.id = kAckAmId;
    am.flags = UCP_AM_FLAG_WHOLE_MSG;
    am.cb = &RequestLoop::onAck;
    am.arg = this;
    KVX_RETURN_IF_ERROR(
        fromUcs(ucp_worker_set_am_recv_handler(node_.worker(), &am),
                "ucp_worker_set_am_recv_handler for the target's acknowledgements"));
  }
  LoopFigures figures;
  figures_ = &figures;
  nextId_ = run.firstId;
  const bool timed = run.seconds > 0;
  const std::uint64_t postLimit = timed ? UINT64_MAX : run.requests;
  figures.postNs.reserve(timed ? 1u << 16 : run.requests);
  std::int64_t stopPostingNs = INT64_MAX;
  std::int64_t nextHealthNs = monotonicNs() + kHealthCheckNs;
  std::uint64_t posted = 0;
  figures.firstPostNs = monotonicNs();
  if (timed) stopPostingNs = figures.firstPostNs + static_cast<std::int64_t>(run.seconds * 1e9);

  Status status;
  for (unsigned iteration = 0; status.isOk(); ++iteration) {
    while (!free_.empty() && posted < postLimit && status.isOk()) {
      if (timed && monotonicNs() >= stopPostingNs) break;
      InFlight* r = free_.back();
      free_.pop_back();
      ++posted;
      status = post(*r);
    }
    if (!status.isOk()) break;
    const bool postingDone = posted >= postLimit || (timed && monotonicNs() >= stopPostingNs);
    if (postingDone && free_.size() == options_.window && ready_.empty()) break;
    ucp_worker_progress(node_.worker());
    for (std::size_t i = 0; i < ready_.size() && status.isOk(); ++i) status = advance(*ready_[i]);
    ready_.clear();
    if (node_.endpointFailed()) status = node_.endpointError();
    if (iteration % kCheckEvery == 0 && status.isOk()) {
      const std::int64_t now = monotonicNs();
      if (std::chrono::steady_clock::now() >= deadline) {
        status = timedOut("bare UCP loop: " + std::to_string(figures.requests) + " of " +
                          std::to_string(posted) + " posted requests retired by the deadline");
      } else if (now >= nextHealthNs) {
        nextHealthNs = now + kHealthCheckNs;
        status = healthCheck_();
      }
    }
  }
  figures_ = nullptr;
  if (!status.isOk()) return status;
  if (figures.requests == 0) figures.lastRetireNs = figures.firstPostNs;
  return figures;
}

}  // namespace kvx::bench
