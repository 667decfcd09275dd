#pragma once

// UcxContext: one ucp_context (UCX's global state for one transport: transports opened,
// memory domains, registration cache) and what it can do.
//
// Threads: the context is created with mt_workers_shared = 0; every call that uses it
// (ucp_mem_map, ucp_rkey_pack, worker calls) is made under the transport's lock
// (UcxWorker::mutex()), so UCX needs no locking of its own.

#include <ucp/api/ucp.h>

#include <memory>

#include "engine/transport/transport.h"
#include "kvx/result.h"

namespace kvx::engine::ucx {

class UcxContext {
 public:
  // ucp_init with RMA, AM and WAKEUP, configured by computeUcxSettings(options).
  static Result<std::shared_ptr<UcxContext>> create(const TransportOptions& options);

  ~UcxContext();
  UcxContext(const UcxContext&) = delete;
  UcxContext& operator=(const UcxContext&) = delete;

  ucp_context_h handle() const { return context_; }
  // From ucp_context_query(UCP_ATTR_FIELD_MEMORY_TYPES): false unless UCX was built with CUDA.
  bool supportsCuda() const { return supportsCuda_; }

 private:
  explicit UcxContext(ucp_context_h context, bool supportsCuda)
      : context_(context), supportsCuda_(supportsCuda) {}

  ucp_context_h context_;
  bool supportsCuda_;
};

}  // namespace kvx::engine::ucx
