#pragma once

// UcxEndpoint: a ucp_ep to a peer's worker, created from the peer's (framed) worker address with
// UCP_ERR_HANDLING_MODE_PEER so that a dead peer fails its operations instead of hanging.
//
// Operations: put/get are ucp_put_nbx/ucp_get_nbx, flush is ucp_ep_flush_nbx, sendMessage is
// ucp_am_send_nbx on kMessageAmId. Each posted operation lives in its UCX request
// (UcxRequest) on this endpoint's pending list until UCX completes it, so close() can
// account for every one: the Completion fires exactly once, at post time, from progress(),
// or from close().
//
// Failure: UCX's error callback (inside progress) marks the endpoint failed; UCX then fails
// the requests in flight, later posts fail at once with PEER_FAILED, and the
// EndpointErrorHandler runs from the next progress(), outside the lock.
//
// close(force): destroys the live remote keys, then ucp_ep_close_nbx (FORCE when `force` or
// when the peer failed; otherwise flush-then-close, which waits for the operations in
// flight and so for the peer to progress) and
// progresses the worker until the close request completes or a deadline passes (2 s forced,
// 5 s graceful; forceClose() takes the caller's). Requests UCX has not completed by then are
// completed here with CANCELLED (forced) or TIMED_OUT (graceful) and detached, so a late UCX
// callback only frees them.
//
// Use force only to abandon a peer: when the peer also connected back to this transport, UCX
// pairs the two endpoints into one connection, and a forced close leaves the peer's endpoint
// to us hanging with no error until UCX's keepalive notices (~20 s on tcp, measured). A
// graceful close leaves the peer's endpoint working. Destroying an endpoint that is still
// open closes it gracefully (close(false)).
//
// Thread safety: every member may be called from any thread; all state is guarded by the
// worker's mutex.

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>

#include "engine/transport/endpoint.h"
#include "engine/transport/transport.h"
#include "engine/transport/ucx/ucx_endpoint_info.h"
#include "engine/transport/ucx/ucx_peer_probe.h"
#include "engine/transport/ucx/ucx_request.h"
#include "engine/transport/ucx/ucx_worker.h"

namespace kvx::engine::ucx {

class UcxRemoteKey;

class UcxEndpoint final : public Endpoint, public std::enable_shared_from_this<UcxEndpoint> {
 public:
  // With `probe`, every key is checked by it before UCX unpacks it here (a cached verdict,
  // normally: the engine checks a peer's keys when its metadata arrives). The probe process
  // itself passes none.
  static Result<std::shared_ptr<UcxEndpoint>> connect(std::shared_ptr<UcxWorker> worker,
                                                      std::span<const std::uint8_t> peerAddress,
                                                      EndpointErrorHandler onError,
                                                      std::shared_ptr<UcxPeerProbe> probe = {});
  ~UcxEndpoint() override;

  Result<std::unique_ptr<RemoteKey>> unpackRemoteKey(std::span<const std::uint8_t> packed,
                                                     MemoryKind kind) override;
  void put(const RmaOp& op, Completion* completion) override;
  void get(const RmaOp& op, Completion* completion) override;
  void postBatch(std::span<const RmaOp> ops, bool write, Completion* completion) override;
  void flush(Completion* completion) override;
  void sendMessage(std::span<const std::uint8_t> header, std::span<const std::uint8_t> payload,
                   Completion* completion) override;
  void close(bool force) override;
  void forceClose(std::chrono::steady_clock::time_point deadline) override;
  bool failed() const override { return failed_.load(std::memory_order_acquire); }
  std::string description() const override { return description_; }
  bool peerWritesDirectly() const override { return lanesLetPeerWriteDirectly(description_); }

  UcxWorker& worker() const { return *worker_; }
  // REQUIRES: the worker's mutex. Called by a UcxRemoteKey being destroyed.
  void forgetKeyLocked(UcxRemoteKey* key) KVX_REQUIRES(worker_->mutex()) { keys_.erase(key); }

 private:
  UcxEndpoint(std::shared_ptr<UcxWorker> worker, EndpointErrorHandler onError);
  // `ucxAddress`: the peer's worker address, already taken out of its frame.
  Status open(std::span<const std::uint8_t> ucxAddress);

  // From inside ucp_worker_progress, under the worker's mutex.
  static void onUcxError(void* arg, ucp_ep_h ep, ucs_status_t status);
  // REQUIRES: the worker's mutex. Non-OK when nothing may be posted now.
  Status checkPostableLocked(const char* what) const KVX_REQUIRES(worker_->mutex());
  // REQUIRES: the worker's mutex. Validates `op`; returns its UCX key.
  Result<ucp_rkey_h> checkRmaLocked(const RmaOp& op, const char* what) const
      KVX_REQUIRES(worker_->mutex());
  void postRma(const RmaOp& op, Completion* completion, UcxOp kind);
  // REQUIRES: the worker's mutex, a postable endpoint.
  void postRmaLocked(const RmaOp& op, Completion* completion, UcxOp kind)
      KVX_REQUIRES(worker_->mutex());
  // REQUIRES: the worker's mutex, which it releases while it waits for UCX. `deadline`: how
  // long to progress the close (default: 2 s forced, 5 s graceful).
  void closeLocked(bool force,
                   std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt)
      KVX_REQUIRES(worker_->mutex());

  std::shared_ptr<UcxPeerProbe> probe_;          // checks keys before UCX sees them; may be null
  std::vector<std::uint8_t> framedPeerAddress_;  // what probe_ is given with each key
  std::shared_ptr<UcxWorker> worker_;
  EndpointErrorHandler onError_;
  std::string description_;  // set once in open()
  std::atomic<bool> failed_{false};
  ucp_ep_h ep_ KVX_GUARDED_BY(worker_->mutex()) = nullptr;
  bool closed_ KVX_GUARDED_BY(worker_->mutex()) = false;
  Status failure_ KVX_GUARDED_BY(worker_->mutex());
  PendingRequests pending_ KVX_GUARDED_BY(worker_->mutex());
  std::unordered_set<UcxRemoteKey*> keys_ KVX_GUARDED_BY(worker_->mutex());
};

}  // namespace kvx::engine::ucx
