#include "engine/transport/ucx/ucx_transport.h"

#include "engine/transport/ucx/ucx_context.h"
#include "engine/transport/ucx/ucx_endpoint.h"
#include "engine/transport/ucx/ucx_frame.h"
#include "engine/transport/ucx/ucx_memory.h"
#include "engine/transport/ucx/ucx_remote_key.h"
#include "engine/transport/ucx/ucx_transport_factory.h"

namespace kvx::engine::ucx {

bool UcxTransport::supportsMemoryKind(MemoryKind kind) const {
  switch (kind) {
    case MemoryKind::kHost: return true;
    case MemoryKind::kCuda: return worker_->context().supportsCuda();
  }
  return false;
}

std::string UcxTransport::whyNotMemoryKind(MemoryKind kind) const {
  if (supportsMemoryKind(kind)) return {};
  // Only CUDA memory can be missing: UCX always moves host memory.
  return worker_->context().whyNotCuda();
}

Result<std::unique_ptr<TransportMemory>> UcxTransport::registerMemory(void* address,
                                                                      std::uint64_t length,
                                                                      MemoryKind kind, int) {
  KVX_ASSIGN_OR_RETURN(std::unique_ptr<UcxMemory> memory,
                       UcxMemory::registerRegion(worker_, address, length, kind));
  return std::unique_ptr<TransportMemory>(std::move(memory));
}

Result<std::unique_ptr<TransportMemory>> UcxTransport::allocateMemory(std::uint64_t length,
                                                                      MemoryKind kind, int) {
  KVX_ASSIGN_OR_RETURN(std::unique_ptr<UcxMemory> memory,
                       UcxMemory::allocate(worker_, length, kind));
  return std::unique_ptr<TransportMemory>(std::move(memory));
}

Result<std::shared_ptr<Endpoint>> UcxTransport::connect(std::span<const std::uint8_t> peerAddress,
                                                        EndpointErrorHandler onError) {
  // The frame's own checks first: garbage costs no probe.
  KVX_RETURN_IF_ERROR(unframe(kAddressMagic, peerAddress, "peer transport address").status());
  KVX_RETURN_IF_ERROR(probe_->check(peerAddress));
  KVX_ASSIGN_OR_RETURN(std::shared_ptr<UcxEndpoint> endpoint,
                       UcxEndpoint::connect(worker_, peerAddress, std::move(onError), probe_));
  return std::shared_ptr<Endpoint>(std::move(endpoint));
}

Status UcxTransport::checkPeerKeys(std::span<const std::uint8_t> peerAddress,
                                   std::span<const PeerKey> keys) {
  std::vector<PeerKey> framed;  // garbage in kvx's own frame costs no probe
  for (const PeerKey& key : keys) {
    if (key.packed.empty()) continue;  // a region without a key (reached through staging)
    KVX_RETURN_IF_ERROR(parseRemoteKey(key.packed).status());
    framed.push_back(key);
  }
  KVX_RETURN_IF_ERROR(unframe(kAddressMagic, peerAddress, "peer transport address").status());
  return probe_->check(peerAddress, framed);
}

void UcxTransport::setMessageHandler(MessageHandler handler) {
  worker_->setMessageHandler(std::move(handler));
}

Result<std::unique_ptr<Transport>> createUcxTransport(const TransportOptions& options) {
  KVX_ASSIGN_OR_RETURN(std::shared_ptr<UcxContext> context, UcxContext::create(options));
  const std::string name = options.agentName.empty() ? "kvx" : options.agentName;
  KVX_ASSIGN_OR_RETURN(std::shared_ptr<UcxWorker> worker,
                       UcxWorker::create(std::move(context), name));
  return std::unique_ptr<Transport>(std::make_unique<UcxTransport>(std::move(worker), options));
}

}  // namespace kvx::engine::ucx
