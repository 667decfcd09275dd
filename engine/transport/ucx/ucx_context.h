#pragma once

// UcxContext: one ucp_context (UCX's global state for one transport: transports opened,
// memory domains, registration cache) and what it can do.
//
// Threads: the context is created with mt_workers_shared = 0; every call that uses it
// (ucp_mem_map, ucp_rkey_pack, worker calls) is made under the transport's lock
// (UcxWorker::lock()), so UCX needs no locking of its own.

#include <ucp/api/ucp.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/transport/transport.h"
#include "engine/transport/ucx/ucx_config.h"
#include "kvx/result.h"

namespace kvx::engine::ucx {

// Why `context`, made with `settings`, cannot put and get CUDA memory, or "" when it can (see
// UcxContext::supportsCuda). For code that makes its own context, as the bare loop does.
Result<std::string> whyContextCannotMoveCuda(ucp_context_h context,
                                             const std::vector<UcxSetting>& settings);

class UcxContext {
 public:
  // ucp_init with RMA, AM and WAKEUP, configured by computeUcxSettings(options).
  static Result<std::shared_ptr<UcxContext>> create(const TransportOptions& options);

  ~UcxContext();
  UcxContext(const UcxContext&) = delete;
  UcxContext& operator=(const UcxContext&) = delete;

  ucp_context_h handle() const { return context_; }
  // Whether kvx can put and get CUDA memory through this context: UCX was built with CUDA
  // (ucp_context_query lists UCS_MEMORY_TYPE_CUDA) and is a release whose put/get takes it
  // (ucxRmaTakesGpuMemory, ucx_gpu_transports.h).
  bool supportsCuda() const { return whyNotCuda_.empty(); }
  // Why not, or "" when it can: "UCX 1.13.1 was built without CUDA support (...)".
  const std::string& whyNotCuda() const { return whyNotCuda_; }

 private:
  UcxContext(ucp_context_h context, std::string whyNotCuda)
      : context_(context), whyNotCuda_(std::move(whyNotCuda)) {}

  ucp_context_h context_;
  std::string whyNotCuda_;
};

}  // namespace kvx::engine::ucx
