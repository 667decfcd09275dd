#pragma once

// UcxMessageReceiver: receives kvx messages (one UCX active-message id) on a worker and
// hands them to the transport's MessageHandler.
//
// Eager messages are delivered straight from UCX's receive callback (the spans point into
// UCX's buffers; copying is the handler's job). Rendezvous messages
// (UCP_AM_RECV_ATTR_FLAG_RNDV, large payloads) are received with ucp_am_recv_data_nbx into a
// buffer this class owns and delivered when that receive completes.
//
// Thread: every member runs under the transport's lock (UcxWorker::lock()), the callbacks
// from inside ucp_worker_progress(); so the MessageHandler runs under that lock and must not
// call back into the transport (transport.h says so).

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/transport/transport.h"
#include "kvx/status.h"

namespace kvx::engine::ucx {

// The active-message id that carries Endpoint::sendMessage.
inline constexpr unsigned kMessageAmId = 0;

class UcxMessageReceiver {
 public:
  explicit UcxMessageReceiver(std::string agentName) : agentName_(std::move(agentName)) {}
  // REQUIRES: the worker was destroyed (no receive is still running in UCX).
  ~UcxMessageReceiver();
  UcxMessageReceiver(const UcxMessageReceiver&) = delete;
  UcxMessageReceiver& operator=(const UcxMessageReceiver&) = delete;

  // Registers the receive callback for kMessageAmId on `worker`.
  Status install(ucp_worker_h worker);
  void setHandler(MessageHandler handler) { handler_ = std::move(handler); }
  std::size_t rendezvousInFlight() const { return receives_.size(); }

 private:
  struct RendezvousReceive {
    UcxMessageReceiver* owner;
    std::vector<std::uint8_t> header;
    std::unique_ptr<std::uint8_t[]> payload;
    std::size_t length;
  };

  static ucs_status_t onMessage(void* arg, const void* header, std::size_t headerLength, void* data,
                                std::size_t length, const ucp_am_recv_param_t* param);
  static void onRendezvousData(void* request, ucs_status_t status, std::size_t length,
                               void* userData);

  ucs_status_t startRendezvous(const void* header, std::size_t headerLength, void* descriptor,
                               std::size_t length);
  void finishRendezvous(RendezvousReceive* receive, ucs_status_t status);
  void deliver(const void* header, std::size_t headerLength, const void* payload,
               std::size_t length);

  std::string agentName_;
  ucp_worker_h worker_ = nullptr;
  MessageHandler handler_;
  std::vector<std::unique_ptr<RendezvousReceive>> receives_;
};

}  // namespace kvx::engine::ucx
