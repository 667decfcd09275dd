#pragma once

// BareUcpOptions: what one run of the bare UCP reference (`kvx-bare-ucp`) measures. The same
// struct drives the command line (bare_ucp_cli.h turns it into arguments and back) and the
// in-process runner (bare_ucp_runner.h), so `kvx bench` and a person at a shell run the very
// same loop.
//
// A "request" is `segments` RMA operations of `segmentBytes` each (ucp_put_nbx or
// ucp_get_nbx), then one ucp_ep_flush_nbx, then (with `notify`) one small ucp_am_send_nbx.
// `window` requests are kept in flight. Segment i of a request uses the same slot index in
// the local and the target buffer (slot = segmentBytes-sized piece of a `bufferBytes`
// buffer); `pattern` picks adjacent slots or random ones.
//
// Plain value type; no threads.

#include <cstdint>
#include <string>
#include <string_view>

#include "kvx/memory.h"
#include "kvx/result.h"

namespace kvx::bench {

enum class BareOp : std::uint8_t { kPut, kGet };
enum class SlotPattern : std::uint8_t { kContiguous, kRandom };
// How both processes get their buffers, as kvx does: kRegistered = ucp_mem_map of memory the
// program allocated (kvx's registerMemory); kUcx = UCP_MEM_MAP_ALLOCATE (kvx's allocateMemory).
enum class BufferAlloc : std::uint8_t { kRegistered, kUcx };

std::string_view toString(BareOp op);
std::string_view toString(SlotPattern pattern);
std::string_view toString(BufferAlloc alloc);
Result<BareOp> parseBareOp(std::string_view text);
Result<SlotPattern> parseSlotPattern(std::string_view text);
Result<BufferAlloc> parseBufferAlloc(std::string_view text);

struct BareUcpOptions {
  std::string transport = "shm";  // kvx's names: "shm" or "tcp" (TransportOptions::transports)
  std::string netDevices = "lo";  // UCX_NET_DEVICES for tcp; ignored by shm
  BufferAlloc alloc = BufferAlloc::kRegistered;
  // Where both processes' buffers live: host memory, or device memory of CUDA device
  // `device` (allocated with the GPU runtime kvx uses and registered with ucp_mem_map as
  // UCS_MEMORY_TYPE_CUDA), so that GPU figures of kvx have a bare loop on GPU memory beside
  // them. CUDA needs --alloc registered and a UCX that moves CUDA memory.
  MemoryKind memory = MemoryKind::kHost;
  int device = 0;

  BareOp op = BareOp::kPut;
  std::uint64_t segmentBytes = 32 * 1024;  // S; a multiple of 8
  std::uint32_t segments = 1;              // K per request
  std::uint32_t window = 1;                // W requests in flight
  std::uint64_t requests = 1000;           // N measured requests (ignored when seconds > 0)
  double seconds = 0;                      // > 0: post requests for this long instead
  std::uint32_t warmupRequests = 16;       // run first, not measured
  SlotPattern pattern = SlotPattern::kContiguous;
  // 0: max(256 MiB, 2 * window * segments * segmentBytes), rounded down to whole segments.
  std::uint64_t bufferBytes = 0;
  bool notify = false;
  // One request at a time (K S-byte puts + flush + AM; the next once the target acknowledged
  // it): post -> receiver notification latency. Implies notify; requires op put, window 1.
  bool fixedOverhead = false;

  // How long the target keeps calling ucp_worker_progress after it last found work before
  // it arms the worker and sleeps on its event fd. 0 (default): sleep at once. kvx's
  // progress thread spins 50 us (AgentOptions::progressSpin); a large value makes a
  // busy-polling target (UCX-NOTES' baselines).
  double targetSpinUs = 0;

  // CPUs the two processes pin themselves to (sched_setaffinity, before UCX starts its
  // threads); -1: not pinned. On a small machine two busy processes left to the scheduler
  // may share one CPU and then wait for each other a scheduler slice at a time.
  int initiatorCpu = -1;
  int targetCpu = -1;

  bool verify = true;            // checksum both buffers at the end against the expected bytes
  bool memcpyReference = false;  // also measure memcpy of S-byte pieces from DRAM
  bool memcpyOnly = false;       // only the memcpy reference: no UCX, no target process
  double memcpySeconds = 1.0;    // how long the memcpy reference copies
  double timeoutSeconds = 120;   // deadline for the whole run, both processes
  std::uint64_t seed = 1;        // random slot sequence
  bool skipData = false;         // post no RMA ops: tests (verification must then fail), and the
                                 // flush + AM alone of fixedOverhead (notification-only overhead)

  // bufferBytes with the default applied.
  std::uint64_t effectiveBufferBytes() const;
  // Whole segment slots in the buffer.
  std::uint64_t slotCount() const { return effectiveBufferBytes() / segmentBytes; }
  bool notifies() const { return notify || fixedOverhead; }
};

// OK, or INVALID_ARGUMENT naming the first option that is wrong and the value given.
Status validate(const BareUcpOptions& options);

}  // namespace kvx::bench
