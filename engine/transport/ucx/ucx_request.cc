#include "engine/transport/ucx/ucx_request.h"

#include <string>

#include "engine/transport/ucx/ucx_status.h"

namespace kvx::engine::ucx {

const char* toString(UcxOp op) {
  switch (op) {
    case UcxOp::kPut: return "put";
    case UcxOp::kGet: return "get";
    case UcxOp::kFlush: return "flush";
    case UcxOp::kMessage: return "message send";
    case UcxOp::kOther: break;
  }
  return "operation";
}

void initUcxRequest(void* request) {
  auto* r = static_cast<UcxRequest*>(request);
  *r = UcxRequest{nullptr, nullptr, nullptr, nullptr, UcxOp::kOther};
}

void onUcxSendComplete(void* request, ucs_status_t status, void*) {
  auto* r = static_cast<UcxRequest*>(request);
  Completion* completion = r->completion;
  const UcxOp op = r->op;
  if (r->list != nullptr) r->list->remove(r);
  r->completion = nullptr;
  ucp_request_free(request);
  if (completion == nullptr) return;  // already failed by close()
  if (status == UCS_OK) {
    completion->onComplete(Status::ok());
  } else {
    completion->onComplete(fromUcs(status, std::string("UCX ") + toString(op)));
  }
}

void PendingRequests::add(UcxRequest* request, Completion* completion, UcxOp op) {
  request->completion = completion;
  request->op = op;
  request->list = this;
  request->next = nullptr;
  request->prev = tail_;
  if (tail_ != nullptr) {
    tail_->next = request;
  } else {
    head_ = request;
  }
  tail_ = request;
  ++size_;
}

void PendingRequests::remove(UcxRequest* request) {
  if (request->prev != nullptr) {
    request->prev->next = request->next;
  } else {
    head_ = request->next;
  }
  if (request->next != nullptr) {
    request->next->prev = request->prev;
  } else {
    tail_ = request->prev;
  }
  request->prev = request->next = nullptr;
  request->list = nullptr;
  --size_;
}

void PendingRequests::failAll(const Status& status) {
  while (head_ != nullptr) {
    UcxRequest* request = head_;
    Completion* completion = request->completion;
    remove(request);
    request->completion = nullptr;
    if (completion != nullptr) completion->onComplete(status);
  }
}

void finishPost(ucs_status_ptr_t result, Completion* completion, UcxOp op, PendingRequests& pending,
                const char* what) {
  if (result == nullptr) {
    completion->onComplete(Status::ok());
  } else if (isRequest(result)) {
    pending.add(static_cast<UcxRequest*>(result), completion, op);
  } else {
    completion->onComplete(fromUcs(statusOf(result), what));
  }
}

}  // namespace kvx::engine::ucx
