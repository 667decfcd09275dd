#include "engine/transport/ucx/ucx_message_receiver.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <span>

#include "engine/transport/ucx/ucx_status.h"

namespace kvx::engine::ucx {

UcxMessageReceiver::~UcxMessageReceiver() {
  if (!receives_.empty()) {
    spdlog::warn("{}: dropping {} rendezvous message(s) still being received", agentName_,
                 receives_.size());
  }
}

Status UcxMessageReceiver::install(ucp_worker_h worker) {
  worker_ = worker;
  ucp_am_handler_param_t param{};
  param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                     UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  param.id = kMessageAmId;
  param.flags = UCP_AM_FLAG_WHOLE_MSG;
  param.cb = &UcxMessageReceiver::onMessage;
  param.arg = this;
  return fromUcs(ucp_worker_set_am_recv_handler(worker, &param), "ucp_worker_set_am_recv_handler");
}

ucs_status_t UcxMessageReceiver::onMessage(void* arg, const void* header, std::size_t headerLength,
                                           void* data, std::size_t length,
                                           const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxMessageReceiver*>(arg);
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0) {
    return self->startRendezvous(header, headerLength, data, length);
  }
  self->deliver(header, headerLength, data, length);
  return UCS_OK;
}

ucs_status_t UcxMessageReceiver::startRendezvous(const void* header, std::size_t headerLength,
                                                 void* descriptor, std::size_t length) {
  // The header is only valid during this callback: keep a copy for the delivery.
  auto receive = std::make_unique<RendezvousReceive>();
  receive->owner = this;
  const auto* headerBytes = static_cast<const std::uint8_t*>(header);
  receive->header.assign(headerBytes, headerBytes + headerLength);
  receive->payload = std::make_unique_for_overwrite<std::uint8_t[]>(length);
  receive->length = length;

  RendezvousReceive* raw = receive.get();
  receives_.push_back(std::move(receive));

  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.recv_am = &UcxMessageReceiver::onRendezvousData;
  param.user_data = raw;
  ucs_status_ptr_t result =
      ucp_am_recv_data_nbx(worker_, descriptor, raw->payload.get(), length, &param);
  // A request completes later through onRendezvousData; otherwise no callback comes.
  if (!isRequest(result)) finishRendezvous(raw, result == nullptr ? UCS_OK : statusOf(result));
  // UCX owns the descriptor once ucp_am_recv_data_nbx was called, whatever it returned.
  return UCS_INPROGRESS;
}

void UcxMessageReceiver::onRendezvousData(void* request, ucs_status_t status, std::size_t,
                                          void* userData) {
  auto* receive = static_cast<RendezvousReceive*>(userData);
  ucp_request_free(request);
  receive->owner->finishRendezvous(receive, status);
}

void UcxMessageReceiver::finishRendezvous(RendezvousReceive* receive, ucs_status_t status) {
  auto it = std::find_if(receives_.begin(), receives_.end(),
                         [&](const auto& owned) { return owned.get() == receive; });
  if (it == receives_.end()) return;
  std::unique_ptr<RendezvousReceive> owned = std::move(*it);
  receives_.erase(it);
  if (status != UCS_OK) {
    spdlog::warn("{}: dropped a {}-byte message: {}", agentName_, owned->length,
                 fromUcs(status, "rendezvous receive").toString());
    return;
  }
  deliver(owned->header.data(), owned->header.size(), owned->payload.get(), owned->length);
}

void UcxMessageReceiver::deliver(const void* header, std::size_t headerLength, const void* payload,
                                 std::size_t length) {
  if (!handler_) {
    spdlog::warn("{}: dropped a message ({} B header, {} B payload): no message handler set",
                 agentName_, headerLength, length);
    return;
  }
  const auto* h = static_cast<const std::uint8_t*>(header);
  const auto* p = static_cast<const std::uint8_t*>(payload);
  handler_(std::span<const std::uint8_t>(h, headerLength),
           std::span<const std::uint8_t>(p, length));
}

}  // namespace kvx::engine::ucx
