#include "engine/transport/ucx/ucx_endpoint.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>

#include "engine/memory/page_population.h"
#include "engine/transport/ucx/ucx_endpoint_info.h"
#include "engine/transport/ucx/ucx_frame.h"
#include "engine/transport/ucx/ucx_memory.h"
#include "engine/transport/ucx/ucx_message_receiver.h"
#include "engine/transport/ucx/ucx_remote_key.h"
#include "engine/transport/ucx/ucx_status.h"

namespace kvx::engine::ucx {
namespace {

constexpr auto kForceCloseTimeout = std::chrono::seconds(2);
constexpr auto kGracefulCloseTimeout = std::chrono::seconds(5);

std::string describeOp(const RmaOp& op, const char* what) {
  char text[160];
  std::snprintf(text, sizeof(text), "%s of %" PRIu64 " bytes, local %p, remote 0x%" PRIx64, what,
                op.length, op.localAddress, op.remoteAddress);
  return text;
}

ucp_request_param_t sendParam() {
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
  param.cb.send = &onUcxSendComplete;
  return param;
}

}  // namespace

Result<std::shared_ptr<UcxEndpoint>> UcxEndpoint::connect(std::shared_ptr<UcxWorker> worker,
                                                          std::span<const std::uint8_t> peerAddress,
                                                          EndpointErrorHandler onError,
                                                          std::shared_ptr<UcxPeerProbe> probe) {
  KVX_ASSIGN_OR_RETURN(std::span<const std::uint8_t> ucxAddress,
                       unframe(kAddressMagic, peerAddress, "peer transport address"));
  std::shared_ptr<UcxEndpoint> endpoint(new UcxEndpoint(std::move(worker), std::move(onError)));
  if (probe != nullptr) {
    endpoint->probe_ = std::move(probe);
    endpoint->framedPeerAddress_.assign(peerAddress.begin(), peerAddress.end());
  }
  KVX_RETURN_IF_ERROR(endpoint->open(ucxAddress));
  return endpoint;
}

UcxEndpoint::UcxEndpoint(std::shared_ptr<UcxWorker> worker, EndpointErrorHandler onError)
    : worker_(std::move(worker)), onError_(std::move(onError)) {}

Status UcxEndpoint::open(std::span<const std::uint8_t> ucxAddress) {
  UcxWorker::Lock lock(*worker_);
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  const std::vector<std::uint8_t> padded = paddedForUcx(ucxAddress);
  params.address = reinterpret_cast<const ucp_address_t*>(padded.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &UcxEndpoint::onUcxError;
  params.err_handler.arg = this;
  const ucs_status_t status = ucp_ep_create(worker_->handle(), &params, &ep_);
  if (status != UCS_OK) {
    ep_ = nullptr;
    closed_ = true;
    return fromUcs(status, "ucp_ep_create to a " + std::to_string(ucxAddress.size()) +
                               "-byte peer worker address");
  }
  description_ = describeEndpoint(ep_);
  spdlog::info("{}: UCX endpoint connected over {}", worker_->agentName(), description_);
  return Status::ok();
}

UcxEndpoint::~UcxEndpoint() {
  UcxWorker::Lock lock(*worker_);
  closeLocked(false);
}

void UcxEndpoint::onUcxError(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* self = static_cast<UcxEndpoint*>(arg);
  self->worker_->mutex().assumeHeld();  // UCX calls it from progress, under the lock
  self->failure_ = fromUcs(
      status, self->worker_->agentName() + ": UCX endpoint over " + self->description_ + " failed");
  self->failed_.store(true, std::memory_order_release);
  spdlog::warn("{}", self->failure_.toString());
  if (!self->closed_) self->worker_->deferErrorLocked(self->onError_, self->failure_);
}

Status UcxEndpoint::checkPostableLocked(const char* what) const {
  if (closed_) {
    return failedPrecondition(std::string(what) + " on a closed UCX endpoint (over " +
                              description_ + "): not posted");
  }
  if (failed_.load(std::memory_order_relaxed)) return failure_.withContext(what);
  return Status::ok();
}

Result<ucp_rkey_h> UcxEndpoint::checkRmaLocked(const RmaOp& op, const char* what) const {
  if (op.length == 0) return invalidArgument(describeOp(op, what) + ": the length is zero");
  if (op.localAddress == nullptr) {
    return invalidArgument(describeOp(op, what) + ": the local address is null");
  }
  const auto* memory = op.localMemory == nullptr
                           ? nullptr
                           : dynamic_cast<const UcxMemory*>(&op.localMemory->registration());
  if (memory == nullptr) {
    return invalidArgument(describeOp(op, what) +
                           ": localMemory is not a registration of this UCX transport");
  }
  if (!memory->contains(op.localAddress, op.length)) {
    return invalidArgument(describeOp(op, what) + ": the local range is outside its region [" +
                           std::to_string(reinterpret_cast<std::uintptr_t>(memory->address())) +
                           "+" + std::to_string(memory->length()) + ")");
  }
  const auto* key = dynamic_cast<const UcxRemoteKey*>(op.remoteKey);
  if (key == nullptr || key->endpoint() != this) {
    return invalidArgument(describeOp(op, what) +
                           ": the remote key was not unpacked on this endpoint");
  }
  if (!key->covers(op.remoteAddress, op.length)) {
    return invalidArgument(describeOp(op, what) + ": the remote range is outside the peer's " +
                           "region (address " + std::to_string(key->regionAddress()) + ", length " +
                           std::to_string(key->regionLength()) + ")");
  }
  return key->handleLocked();
}

Result<std::unique_ptr<RemoteKey>> UcxEndpoint::unpackRemoteKey(
    std::span<const std::uint8_t> packed, MemoryKind kind) {
  KVX_ASSIGN_OR_RETURN(PackedRemoteKey parsed, parseRemoteKey(packed));
  if (probe_ != nullptr) {
    const PeerKey checked{packed, kind};
    KVX_RETURN_IF_ERROR(probe_->check(framedPeerAddress_, std::span<const PeerKey>(&checked, 1)));
  }
  std::unique_ptr<UcxRemoteKey> key;
  void* mapped = nullptr;
  {
    UcxWorker::Lock lock(*worker_);
    KVX_RETURN_IF_ERROR(checkPostableLocked("unpack remote key"));
    ucp_rkey_h handle = nullptr;
    const std::vector<std::uint8_t> padded = paddedForUcx(parsed.ucxKey);
    const ucs_status_t status = ucp_ep_rkey_unpack(ep_, padded.data(), &handle);
    if (status != UCS_OK) return fromUcs(status, "ucp_ep_rkey_unpack");
    key = std::make_unique<UcxRemoteKey>(shared_from_this(), handle, parsed);
    keys_.insert(key.get());
    // On shared memory UCX maps the peer's segment into this process; anything else
    // (tcp, registered memory) has no such pointer and UCX says so with an error. A
    // CUDA-capable UCX also maps a peer's *device* memory (cuda_ipc): that pointer is
    // device memory, which the CPU must never touch, so only host regions are populated.
    if (kind == MemoryKind::kHost && ucp_rkey_ptr(handle, parsed.address, &mapped) != UCS_OK) {
      mapped = nullptr;
    }
  }
  // The mapping lives as long as the key. Populate its page tables now, outside the lock,
  // so that the first transfers into it do not take one page fault per 4 KiB. Best effort:
  // a failure only leaves the faults to the transfers.
  if (mapped != nullptr) {
    const Status populated = populatePages(mapped, parsed.length);
    if (!populated.isOk()) spdlog::warn("peer region mapping: {}", populated.toString());
  }
  return std::unique_ptr<RemoteKey>(std::move(key));
}

void UcxEndpoint::put(const RmaOp& op, Completion* completion) {
  postRma(op, completion, UcxOp::kPut);
}

void UcxEndpoint::get(const RmaOp& op, Completion* completion) {
  postRma(op, completion, UcxOp::kGet);
}

void UcxEndpoint::postBatch(std::span<const RmaOp> ops, bool write, Completion* completion) {
  const UcxOp kind = write ? UcxOp::kPut : UcxOp::kGet;
  UcxWorker::Lock lock(*worker_);
  const Status status = checkPostableLocked(toString(kind));
  for (const RmaOp& op : ops) {
    if (!status.isOk()) {
      completion->onComplete(status);
    } else {
      postRmaLocked(op, completion, kind);
    }
  }
}

void UcxEndpoint::postRma(const RmaOp& op, Completion* completion, UcxOp kind) {
  UcxWorker::Lock lock(*worker_);
  Status status = checkPostableLocked(toString(kind));
  if (!status.isOk()) return completion->onComplete(std::move(status));
  postRmaLocked(op, completion, kind);
}

void UcxEndpoint::postRmaLocked(const RmaOp& op, Completion* completion, UcxOp kind) {
  const char* what = toString(kind);
  Result<ucp_rkey_h> rkey = checkRmaLocked(op, what);
  if (!rkey.isOk()) return completion->onComplete(rkey.status());

  ucp_request_param_t param = sendParam();
  if (op.localMemory->kind() == MemoryKind::kCuda) {
    // Say it: UCX 1.13 otherwise looks the buffer up in its memory-type cache, which learns
    // of device memory by hooking the CUDA allocation calls. With CUDA 13 those hooks miss
    // cudaMalloc, the buffer passes for host memory, and UCX memcpy()s from the device
    // pointer (a segfault, seen on an H100).
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    param.memory_type = UCS_MEMORY_TYPE_CUDA;
  }
  ucs_status_ptr_t result =
      kind == UcxOp::kPut
          ? ucp_put_nbx(ep_, op.localAddress, op.length, op.remoteAddress, *rkey, &param)
          : ucp_get_nbx(ep_, op.localAddress, op.length, op.remoteAddress, *rkey, &param);
  finishPost(result, completion, kind, pending_,
             kind == UcxOp::kPut ? "ucp_put_nbx" : "ucp_get_nbx");
}

void UcxEndpoint::flush(Completion* completion) {
  UcxWorker::Lock lock(*worker_);
  Status status = checkPostableLocked("flush");
  if (!status.isOk()) return completion->onComplete(std::move(status));
  const ucp_request_param_t param = sendParam();
  finishPost(ucp_ep_flush_nbx(ep_, &param), completion, UcxOp::kFlush, pending_,
             "ucp_ep_flush_nbx");
}

void UcxEndpoint::sendMessage(std::span<const std::uint8_t> header,
                              std::span<const std::uint8_t> payload, Completion* completion) {
  UcxWorker::Lock lock(*worker_);
  Status status = checkPostableLocked("send message");
  if (!status.isOk()) return completion->onComplete(std::move(status));
  const ucp_request_param_t param = sendParam();
  ucs_status_ptr_t result = ucp_am_send_nbx(ep_, kMessageAmId, header.data(), header.size(),
                                            payload.data(), payload.size(), &param);
  finishPost(result, completion, UcxOp::kMessage, pending_, "ucp_am_send_nbx");
}

void UcxEndpoint::close(bool force) {
  UcxWorker::Lock lock(*worker_);
  closeLocked(force);
}

void UcxEndpoint::forceClose(std::chrono::steady_clock::time_point deadline) {
  UcxWorker::Lock lock(*worker_);
  closeLocked(true, deadline);
}

void UcxEndpoint::closeLocked(bool force,
                              std::optional<std::chrono::steady_clock::time_point> until) {
  if (closed_) return;
  closed_ = true;
  // UCX requires the keys unpacked on an endpoint to be destroyed before it closes.
  for (UcxRemoteKey* key : keys_) key->releaseLocked();

  const bool forced = force || failed_.load(std::memory_order_relaxed);
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = forced ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  ucs_status_ptr_t request = ucp_ep_close_nbx(ep_, &param);
  ep_ = nullptr;
  const auto started = std::chrono::steady_clock::now();
  const auto deadline = until.value_or(
      started + (forced ? std::chrono::steady_clock::duration(kForceCloseTimeout)
                        : std::chrono::steady_clock::duration(kGracefulCloseTimeout)));
  if (isRequest(request)) {
    const bool done = worker_->progressUntil(
        [&] { return ucp_request_check_status(request) != UCS_INPROGRESS; }, deadline);
    if (!done) {
      spdlog::warn(
          "{}: closing the UCX endpoint over {} did not finish within {} ms", worker_->agentName(),
          description_,
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - started).count());
    }
    // Frees it now, or (still in progress) when UCX completes it.
    ucp_request_free(request);
  } else if (isError(request) && statusOf(request) != UCS_ERR_CANCELED) {
    spdlog::debug("{}: {}", worker_->agentName(),
                  fromUcs(statusOf(request), "ucp_ep_close_nbx").toString());
  }
  // A forced close cancels the requests in flight; UCX may report some of them only from
  // its next progress.
  worker_->progressUntil([&]() KVX_REQUIRES(worker_->mutex()) { return pending_.empty(); },
                         deadline);
  if (!pending_.empty()) {
    const std::string why = "UCX endpoint over " + description_ + " closed with " +
                            std::to_string(pending_.size()) + " operation(s) in flight";
    pending_.failAll(forced ? cancelled(why) : timedOut(why));
  }
}

}  // namespace kvx::engine::ucx
