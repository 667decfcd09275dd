#pragma once

// UcxRequest: the few bytes kvx keeps inside every UCX request (ucp_params_t::request_size),
// so that posting an operation allocates nothing beyond what UCX itself does. A posted
// operation's request records its Completion and sits on its endpoint's PendingRequests
// list until UCX completes it, which lets Endpoint::close() account for every operation.
//
// Thread: everything here runs under the transport's lock (UcxWorker::lock()).

#include <ucp/api/ucp.h>

#include <cstdint>

#include "engine/transport/completion.h"

namespace kvx::engine::ucx {

enum class UcxOp : std::uint8_t { kPut, kGet, kFlush, kMessage, kOther };

const char* toString(UcxOp op);

class PendingRequests;

// Lives in the reserved space in front of which UCX returns its request handle: the handle
// is a pointer to this struct.
struct UcxRequest {
  Completion* completion;  // null once completed or handed back by close()
  PendingRequests* list;   // the endpoint list it is on; null when on none
  UcxRequest* prev;
  UcxRequest* next;
  UcxOp op;
};

// ucp_params_t::request_init: UCX calls it once per request object it creates.
void initUcxRequest(void* request);

// The send callback every posted put/get/flush/message uses: fires the Completion once,
// unlinks the request and returns it to UCX.
void onUcxSendComplete(void* request, ucs_status_t status, void* userData);

// An intrusive list of the requests in flight on one endpoint.
class PendingRequests {
 public:
  PendingRequests() = default;
  PendingRequests(const PendingRequests&) = delete;
  PendingRequests& operator=(const PendingRequests&) = delete;

  // Records `request` as carrying `completion` for `op` and appends it.
  void add(UcxRequest* request, Completion* completion, UcxOp op);
  void remove(UcxRequest* request);
  bool empty() const { return head_ == nullptr; }
  std::uint64_t size() const { return size_; }

  // Detaches every request (UCX will still call back; the callback then only frees it)
  // and completes each Completion with `status`.
  void failAll(const Status& status);

 private:
  UcxRequest* head_ = nullptr;
  UcxRequest* tail_ = nullptr;
  std::uint64_t size_ = 0;
};

// Completes `completion` for a post that returned `result` (NULL, an error or a request).
// `what` names the operation for error messages.
void finishPost(ucs_status_ptr_t result, Completion* completion, UcxOp op, PendingRequests& pending,
                const char* what);

}  // namespace kvx::engine::ucx
