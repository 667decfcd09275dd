#pragma once

// RequestLoop: the measured loop of the bare reference, run by the initiator on its own
// thread with busy progress (ucp_worker_progress in a loop, no sleeping).
//
// A request: its K ops posted with ucp_put_nbx / ucp_get_nbx (no callback; their handles
// are released at once, ucp_request_free), then one ucp_ep_flush_nbx whose completion
// means all of them are done, then with notify one ucp_am_send_nbx (8-byte header: the
// request id, no payload), posted from the loop right after the flush completes (kvx posts
// its notification the same way, after the flush). The request retires when the flush and
// the AM send have completed (with --fixed-overhead, also when the target acknowledged it:
// kAckAmId, target_protocol.h); at most `window` requests are in flight.
//
// Timing (CLOCK_MONOTONIC): a request's initiator latency is from just before its first op
// is posted until its flush callback runs. Post times are kept by request id so that the
// receiver latency (target's AM time - post time) can be computed from the target's report.
//
// One owner thread. UCP callbacks run inside ucp_worker_progress on that thread.

#include <ucp/api/ucp.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "bench/bare/bare_ucp_node.h"
#include "bench/bare/bare_ucp_options.h"
#include "bench/bare/slot_sequence.h"
#include "workload/latency_stats.h"

namespace kvx::bench {

// CLOCK_MONOTONIC in nanoseconds; the same clock in every process of the machine.
std::int64_t monotonicNs();

struct LoopRun {
  std::uint64_t firstId = 0;   // request ids are firstId, firstId + 1, ...
  std::uint64_t requests = 0;  // how many to run (ignored when seconds > 0)
  double seconds = 0;          // > 0: post new requests for this long
};

struct LoopFigures {
  std::uint64_t requests = 0;
  std::int64_t firstPostNs = 0;
  std::int64_t lastRetireNs = 0;
  std::vector<std::int64_t> postNs;  // by request id - firstId
  workload::LatencyRecorder initiator;
};

class RequestLoop {
 public:
  // `healthCheck` is called every few milliseconds; a non-OK status stops the loop with it.
  // `touched` (one byte per slot) gets every slot a posted request used.
  RequestLoop(BareUcpNode& node, const BareUcpOptions& options, std::uint64_t remoteBase,
              std::vector<std::uint8_t>& touched, std::function<Status()> healthCheck);
  // After a failed run UCX may still hold flush or AM requests whose callbacks point at this
  // loop's request records (UCX completes them as late as ucp_worker_destroy). Those records
  // are then detached and kept until the process exits, so that late callbacks only free
  // their request.
  ~RequestLoop();
  RequestLoop(const RequestLoop&) = delete;
  RequestLoop& operator=(const RequestLoop&) = delete;

  // Runs requests until `run` is done and all of them have retired. Stops at the first
  // error (an op, flush or AM that failed, the endpoint's error handler, `deadline`); then
  // requests may still be in flight, and the caller must close the endpoint (which completes
  // them) while this object is alive.
  Result<LoopFigures> run(const LoopRun& run, Deadline deadline);

 private:
  struct InFlight {
    RequestLoop* loop = nullptr;  // null once detached by the destructor
    std::uint64_t id = 0;         // also the AM header: must stay valid until the send completes
    std::int64_t postNs = 0;
    bool flushed = false;
    bool notified = false;  // AM posted
    bool amDone = false;
    bool acknowledged = false;  // --fixed-overhead: the target's kAckAmId for this id arrived
    bool retired = false;
    bool ucxOwned = false;  // a flush or AM request with this record as user data is pending
    ucs_status_t error = UCS_OK;
  };

  static void onFlush(void* request, ucs_status_t status, void* userData);
  static void onAmSent(void* request, ucs_status_t status, void* userData);
  static ucs_status_t onAck(void* arg, const void* header, std::size_t headerLength, void* data,
                            std::size_t length, const ucp_am_recv_param_t* param);
  Status post(InFlight& request);
  Status advance(InFlight& request);

  BareUcpNode& node_;
  const BareUcpOptions& options_;
  std::uint64_t remoteBase_;
  std::vector<std::uint8_t>& touched_;
  std::function<Status()> healthCheck_;
  SlotSequence slots_;
  std::vector<std::uint64_t> segmentSlots_;
  std::unique_ptr<InFlight[]> inFlight_;  // `window` records
  std::vector<InFlight*> free_;
  std::vector<InFlight*> ready_;  // completed a step inside a callback; advanced by the loop
  std::uint64_t nextId_ = 0;
  LoopFigures* figures_ = nullptr;  // the running run()'s, else null
};

}  // namespace kvx::bench
