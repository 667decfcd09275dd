#pragma once

// Endpoint: a one-way data-path connection from this transport to a peer's transport.

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "engine/transport/completion.h"
#include "engine/transport/transport_memory.h"
#include "kvx/result.h"

namespace kvx::engine {

// A peer's region key unpacked for one endpoint. Destroy it before its endpoint is closed.
class RemoteKey {
 public:
  virtual ~RemoteKey() = default;
};

// One RMA operation. `localMemory` is the registration that contains
// [localAddress, localAddress + length); the remote range is inside the region of `remoteKey`.
struct RmaOp {
  void* localAddress = nullptr;
  const TransportMemory* localMemory = nullptr;
  std::uint64_t remoteAddress = 0;
  const RemoteKey* remoteKey = nullptr;
  std::uint64_t length = 0;
};

// Thread safety: every member may be called from any thread; the transport serialises them
// with its own lock. Completions follow the contract in completion.h.
class Endpoint {
 public:
  virtual ~Endpoint() = default;

  // Unpacks a peer's packed key for a region of memory kind `kind` (as the owner declared
  // it). The kind matters where a transport maps the peer's memory into this process: only
  // host memory may be touched there by the CPU.
  virtual Result<std::unique_ptr<RemoteKey>> unpackRemoteKey(std::span<const std::uint8_t> packed,
                                                             MemoryKind kind) = 0;

  // One-sided write local -> remote. The local buffer must stay valid until completion.
  virtual void put(const RmaOp& op, Completion* completion) = 0;
  // One-sided read remote -> local.
  virtual void get(const RmaOp& op, Completion* completion) = 0;
  // Posts every op of `ops` in order, as put() (`write`) or get() would, each completing
  // through `completion`: one call, so that a transport takes its lock once per batch.
  virtual void postBatch(std::span<const RmaOp> ops, bool write, Completion* completion) {
    for (const RmaOp& op : ops) write ? put(op, completion) : get(op, completion);
  }
  // Completes once every operation posted earlier on this endpoint is complete at the
  // remote side (data placed for puts, data arrived for gets).
  virtual void flush(Completion* completion) = 0;
  // Sends a message to the peer's MessageHandler. Ordered after earlier operations that a
  // completed flush covered. `header` and `payload` must stay valid until completion.
  virtual void sendMessage(std::span<const std::uint8_t> header,
                           std::span<const std::uint8_t> payload, Completion* completion) = 0;

  // Closes the endpoint. With `force`, in-flight operations are aborted: their completions
  // fire with an error before close() returns, and no further byte of them lands afterwards.
  // Without it, close waits (bounded by the transport's own timeout) for them to finish.
  // Idempotent; every later post completes at once with FAILED_PRECONDITION.
  virtual void close(bool force) = 0;
  // close(true), waiting for the transport's side of the close at most until `deadline`:
  // operations it has not reported by then complete here with CANCELLED, and no byte of them
  // lands afterwards. For a link reset that must not stall its caller; a transport whose
  // close does not wait need not override it.
  virtual void forceClose(std::chrono::steady_clock::time_point deadline) {
    (void)deadline;
    close(true);
  }

  // True once the transport saw an error on this endpoint (peer died, link cut).
  // failed() and description() must not take the transport's lock: callers hold locks of
  // their own around them that completions (run under the transport's lock) take too.
  virtual bool failed() const = 0;

  // What carries this endpoint's data, for logs and reports, e.g. "tcp/lo, self".
  virtual std::string description() const = 0;

  // True where put() and get() copy the bytes before they return even though they complete
  // later (the in-process transport; the socket transport, whose puts write what the socket
  // takes). Posting then costs the caller the copy, as an
  // operation that completes inside its post does (UCX over shared memory); the transfer
  // bounds how much one turn posts by those bytes (engine/transfer/transfer.cc).
  virtual bool copiesWhenPosted() const { return false; }

  // True where the peer's process writes into this process's memory by itself (UCX over
  // shared memory or cross-memory attach, CUDA IPC): close() then stops this side's
  // operations, but not a copy the peer is in the middle of, nor one a stopped peer makes
  // when it resumes. False where this process places every byte the peer sends (the socket
  // transport, UCX over tcp or RDMA, whose closed endpoint refuses what arrives for it): there
  // close(), with Transport::dropPeer, is the end of the peer's writes. Must not take the
  // transport's lock (as failed()).
  virtual bool peerWritesDirectly() const { return false; }
};

}  // namespace kvx::engine
