#pragma once

// BareUcpNode: one process's UCP state in the bare reference, set up exactly as kvx sets up
// its own (engine/transport/ucx): the UCX configuration from computeUcxSettings/makeUcxConfig
// for the same transport names, a context with RMA + AM + WAKEUP and mt_workers_shared = 0,
// a UCS_THREAD_MODE_SERIALIZED worker, endpoints with UCP_ERR_HANDLING_MODE_PEER, and one
// buffer mapped as kvx maps memory (ucp_mem_map of the program's memory, or
// UCP_MEM_MAP_ALLOCATE), in host memory or in CUDA device memory (options.memory).
//
// Owns the context, the worker, the buffer and at most one endpoint with one remote key;
// the destructor releases them in the order UCX requires. One owner thread.

#include <ucp/api/ucp.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bench/bare/bare_ucp_options.h"
#include "bench/bare/deadline.h"
#include "engine/gpu/device_allocation.h"
#include "kvx/result.h"

namespace kvx::bench {

class BareUcpNode {
 public:
  static Result<std::unique_ptr<BareUcpNode>> create(const BareUcpOptions& options);
  ~BareUcpNode();
  BareUcpNode(const BareUcpNode&) = delete;
  BareUcpNode& operator=(const BareUcpNode&) = delete;

  // The UCX_* settings applied, as describeSettings prints them.
  const std::string& settings() const { return settings_; }
  ucp_worker_h worker() const { return worker_; }
  int eventFd() const { return eventFd_; }
  std::vector<std::uint8_t> workerAddress() const { return address_; }

  // Maps a `bytes` buffer the way the options' alloc and memory say, and pre-faults it (host
  // memory). At most once.
  Status mapBuffer(std::uint64_t bytes);
  // The buffer's address: a device pointer for CUDA memory, which the CPU must not touch
  // (fillBuffer and checksumBuffer copy through the copy engine).
  std::uint8_t* buffer() const { return buffer_; }
  std::uint64_t bufferBytes() const { return bufferBytes_; }
  MemoryKind memoryKind() const { return options_.memory; }
  // The request parameters every RMA operation on the buffer starts from: its memory type
  // stated for CUDA memory, as kvx's endpoint states it.
  ucp_request_param_t rmaParam() const;
  // Fills the buffer with fillPattern's words for `seed`; its bufferChecksum.
  Status fillBuffer(std::uint64_t seed);
  Result<std::uint64_t> checksumBuffer() const;
  Result<std::vector<std::uint8_t>> packBufferKey() const;

  // Connects to a peer worker and unpacks the peer's packed key on that endpoint (none when
  // `packedKey` is empty).
  Status connect(std::span<const std::uint8_t> peerAddress,
                 std::span<const std::uint8_t> packedKey);
  // Populates this process's mapping of the peer's [remoteAddress, +length) when UCX maps
  // it here (shared memory into UCX-allocated memory); nothing otherwise.
  Status populateRemote(std::uint64_t remoteAddress, std::uint64_t length);
  ucp_ep_h endpoint() const { return ep_; }
  ucp_rkey_h remoteKey() const { return rkey_; }
  // The transports UCX chose for the endpoint ("tcp/lo"), from ucp_ep_print_info.
  std::string lanes() const;
  // Set by UCX's error handler; the reason in endpointError().
  bool endpointFailed() const { return epFailed_; }
  Status endpointError() const;
  // Destroys the key and closes the endpoint (gracefully unless `force` or failed: then the
  // peer must be progressing), progressing this worker until the close completes or
  // `deadline` passes (TIMED_OUT).
  Status closeEndpoint(Deadline deadline, bool force);

 private:
  explicit BareUcpNode(const BareUcpOptions& options) : options_(options) {}
  static void onEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);

  BareUcpOptions options_;
  std::string settings_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int eventFd_ = -1;
  std::vector<std::uint8_t> address_;
  ucp_mem_h memh_ = nullptr;
  std::uint8_t* buffer_ = nullptr;
  std::uint64_t bufferBytes_ = 0;
  bool ownsBuffer_ = false;  // mmap'ed by us (registered) rather than by UCX
  // The buffer of CUDA memory; mutable: reading it back runs a copy engine.
  mutable std::optional<engine::gpu::DeviceAllocation> device_;
  ucp_ep_h ep_ = nullptr;
  ucp_rkey_h rkey_ = nullptr;
  bool epFailed_ = false;
  ucs_status_t epStatus_ = UCS_OK;
};

}  // namespace kvx::bench
