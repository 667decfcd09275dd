#pragma once

// UcxTransport: the Transport implementation over UCX (one ucp_context and one ucp_worker).
// Created only through createUcxTransport (ucx_transport_factory.h).
//
// Progress: the caller drives it (progress(), or a thread sleeping on eventFd() after
// arm()). UCX 1.13 emulates put/get on tcp and on shared memory registered by the caller, so
// a transport's operations complete only while the PEER transport progresses too.
//
// Thread safety: every member may be called from any thread; UCX calls are serialised by
// the worker's mutex (see ucx_worker.h for why one kvx lock rather than UCX's MULTI mode).

#include <memory>
#include <string>

#include "engine/transport/transport.h"
#include "engine/transport/ucx/ucx_peer_probe.h"
#include "engine/transport/ucx/ucx_worker.h"

namespace kvx::engine::ucx {

class UcxTransport final : public Transport {
 public:
  UcxTransport(std::shared_ptr<UcxWorker> worker, const TransportOptions& options)
      : worker_(std::move(worker)), probe_(std::make_shared<UcxPeerProbe>(options)) {}

  std::string_view name() const override { return "ucx"; }
  std::vector<std::uint8_t> localAddress() const override { return worker_->address(); }
  bool supportsMemoryKind(MemoryKind kind) const override;
  std::string whyNotMemoryKind(MemoryKind kind) const override;
  Result<std::unique_ptr<TransportMemory>> registerMemory(void* address, std::uint64_t length,
                                                          MemoryKind kind, int device) override;
  Result<std::unique_ptr<TransportMemory>> allocateMemory(std::uint64_t length, MemoryKind kind,
                                                          int device) override;
  // A peer's address, and each of its keys, reach this process's UCX only once
  // kvx-ucx-probe has taken them (ucx_peer_probe.h): a crafted one is INVALID_ARGUMENT
  // here, not an abort inside UCX.
  Result<std::shared_ptr<Endpoint>> connect(std::span<const std::uint8_t> peerAddress,
                                            EndpointErrorHandler onError) override;
  Status checkPeerKeys(std::span<const std::uint8_t> peerAddress,
                       std::span<const PeerKey> keys) override;
  void setMessageHandler(MessageHandler handler) override;
  void setThreadSetup(ThreadSetup setup) override { worker_->setThreadSetup(std::move(setup)); }
  bool progress() override { return worker_->progress(); }
  int eventFd() const override { return worker_->eventFd(); }
  bool arm() override { return worker_->arm(); }
  void wake() override { worker_->signal(); }

  // Probes started so far for peers' addresses and keys (tests).
  std::uint64_t probesRun() const { return probe_->probesRun(); }

 private:
  std::shared_ptr<UcxWorker> worker_;
  std::shared_ptr<UcxPeerProbe> probe_;
};

}  // namespace kvx::engine::ucx
