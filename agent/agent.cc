// kvx::Agent: the public facade. Each member forwards to the engine or the channel; the
// lifetime and threading contracts are in api/include/kvx/agent.h.
#include "kvx/agent.h"

#include "agent/agent_impl.h"
#include "agent/metadata/metadata_codec.h"

namespace kvx {

Agent::Impl& agentImpl(Agent& agent) { return *agent.impl_; }

engine::Engine& agent::engineOf(Agent& agent) { return *agentImpl(agent).engine; }

Agent::Agent(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Agent::~Agent() = default;

Result<std::unique_ptr<Agent>> Agent::create(AgentOptions options) {
  KVX_ASSIGN_OR_RETURN(auto impl, Impl::create(std::move(options)));
  return std::unique_ptr<Agent>(new Agent(std::move(impl)));
}

const std::string& Agent::name() const { return impl_->options.name; }
std::string Agent::listenAddress() const { return impl_->channel->listenAddress(); }

Result<std::string> Agent::dataPathDescription(const std::string& peer) const {
  return impl_->engine->dataPathDescription(peer);
}

Result<bool> Agent::peerWritesDirectly(const std::string& peer) const {
  return impl_->engine->peerWritesDirectly(peer);
}

namespace {

// A name every peer's handshake would refuse (agent/metadata) is refused at registration.
Status checkRegionName(const std::string& name) {
  Status status = agent::metadata::validateRegionName(name, "region name");
  if (status.isOk()) return status;
  return invalidArgument(status.message() + " (every peer's handshake would refuse it)");
}

}  // namespace

Result<RegionId> Agent::registerMemory(const MemoryRegionSpec& spec) {
  KVX_RETURN_IF_ERROR(checkRegionName(spec.name));
  KVX_ASSIGN_OR_RETURN(RegionId id, impl_->engine->registerMemory(spec));
  if (spec.exposed) impl_->publishMetadata();
  return id;
}

Result<AllocatedRegion> Agent::allocateMemory(const AllocationSpec& spec) {
  KVX_RETURN_IF_ERROR(checkRegionName(spec.name));
  KVX_ASSIGN_OR_RETURN(AllocatedRegion region, impl_->engine->allocateMemory(spec));
  if (spec.exposed) impl_->publishMetadata();
  return region;
}

Status Agent::copyIntoRegion(RegionId region, std::uint64_t offset,
                             std::span<const std::byte> bytes, Deadline deadline) {
  return impl_->engine->copyIntoRegion(region, offset, bytes, deadline);
}

Status Agent::copyFromRegion(RegionId region, std::uint64_t offset, std::span<std::byte> out,
                             Deadline deadline) {
  return impl_->engine->copyFromRegion(region, offset, out, deadline);
}

Status Agent::copyRegionPieces(std::span<const RegionCopy> pieces, bool into, Deadline deadline) {
  return impl_->engine->copyRegionPieces(pieces, into, deadline);
}

Status Agent::deregisterMemory(RegionId region) {
  KVX_ASSIGN_OR_RETURN(RegionInfo info, impl_->engine->regionInfo(region));
  KVX_RETURN_IF_ERROR(impl_->engine->deregisterMemory(region));
  if (info.exposed) impl_->publishMetadata();
  return Status::ok();
}

Result<RegionInfo> Agent::regionInfo(RegionId region) const {
  return impl_->engine->regionInfo(region);
}

Result<std::string> Agent::connect(const std::string& address) {
  return connect(address, deadlineIn(impl_->options.connectTimeout));
}

Result<std::string> Agent::connect(const std::string& address, Deadline deadline) {
  KVX_ASSIGN_OR_RETURN(auto remote,
                       impl_->channel->connect(address, impl_->localMetadata(), deadline));
  std::string peerName = remote.name;
  const Status added = impl_->engine->addOrUpdatePeer(std::move(remote));
  if (!added.isOk()) {
    // A control link without a data path is of no use, and a connect that failed must not
    // leave a peer behind that later calls would find half made. Not when the engine still
    // has a peer of that name (stale metadata of an older incarnation): its links stay.
    if (!impl_->engine->peer(peerName).isOk()) (void)impl_->channel->disconnect(peerName);
    return added;
  }
  return peerName;
}

Result<std::vector<std::uint8_t>> Agent::exportMetadata() const {
  return agent::metadata::encodeMetadataBlob(impl_->localMetadata());
}

Result<std::string> Agent::loadPeerMetadata(std::span<const std::uint8_t> blob) {
  KVX_ASSIGN_OR_RETURN(auto remote,
                       agent::metadata::decodeMetadataBlob(blob, impl_->options.maxFrameBytes));
  std::string peerName = remote.name;
  KVX_RETURN_IF_ERROR(impl_->engine->addOrUpdatePeer(std::move(remote)));
  return peerName;
}

Result<PeerInfo> Agent::peerInfo(const std::string& peer) const {
  KVX_ASSIGN_OR_RETURN(auto remote, impl_->engine->peer(peer));
  return PeerInfo{remote->name(), remote->regions(), remote->incarnation(),
                  remote->applicationInfo()};
}

std::vector<std::string> Agent::peers() const { return impl_->engine->peerNames(); }

Status Agent::disconnect(const std::string& peer) {
  KVX_RETURN_IF_ERROR(
      impl_->engine->removePeer(peer, cancelled("disconnected from peer '" + peer + "'")));
  Status channel = impl_->channel->disconnect(peer);
  // A peer loaded from a blob has no control link: that is not an error.
  if (channel.code() == StatusCode::kNotFound) return Status::ok();
  return channel;
}

Result<TransferId> Agent::createTransfer(const TransferRequest& request) {
  return impl_->engine->createTransfer(request);
}

Result<ListId> Agent::prepareLocalList(std::span<const MemoryRange> ranges) {
  return impl_->engine->prepareLocalList(ranges);
}

Result<ListId> Agent::prepareRemoteList(const std::string& peer,
                                        std::span<const MemoryRange> ranges) {
  return impl_->engine->prepareRemoteList(peer, ranges);
}

Result<TransferId> Agent::makeTransfer(TransferOp op, ListId localList,
                                       std::span<const std::uint32_t> localIndices,
                                       ListId remoteList,
                                       std::span<const std::uint32_t> remoteIndices,
                                       std::optional<std::string> notification) {
  return impl_->engine->makeTransfer(op, localList, localIndices, remoteList, remoteIndices,
                                     std::move(notification));
}

Status Agent::releaseList(ListId list) { return impl_->engine->releaseList(list); }
Status Agent::post(TransferId transfer) { return impl_->engine->post(transfer); }
Status Agent::post(TransferId transfer, TransferCallback onFinished) {
  return impl_->engine->post(transfer, std::move(onFinished));
}
TransferStatus Agent::poll(TransferId transfer) const { return impl_->engine->poll(transfer); }
Status Agent::wait(TransferId transfer, Deadline deadline) {
  return impl_->engine->wait(transfer, deadline);
}
Status Agent::cancel(TransferId transfer) { return impl_->engine->cancel(transfer); }
Status Agent::cancel(std::span<const TransferId> transfers) {
  return impl_->engine->cancel(transfers);
}
Result<TransferStats> Agent::transferStats(TransferId transfer) const {
  return impl_->engine->stats(transfer);
}
Status Agent::release(TransferId transfer) { return impl_->engine->release(transfer); }

Result<TransferId> Agent::submit(const TransferRequest& request) {
  KVX_ASSIGN_OR_RETURN(TransferId id, impl_->engine->createTransfer(request));
  Status posted = impl_->engine->post(id);
  if (!posted.isOk()) {
    impl_->engine->release(id).ignore();
    return posted;
  }
  return id;
}

Status Agent::sendNotification(const std::string& peer, std::string payload) {
  return impl_->engine->sendNotification(peer, std::move(payload));
}

std::vector<Notification> Agent::takeNotifications(std::size_t max) {
  return impl_->engine->inbox().take(max);
}

Result<Notification> Agent::waitNotification(Deadline deadline) {
  return impl_->engine->waitNotification(deadline);
}

void Agent::cancelWaits() { impl_->engine->cancelNotificationWaits(); }

void Agent::setNotificationHandler(NotificationHandler handler) {
  impl_->engine->setNotificationHandler(std::move(handler));
}

void Agent::setPeerEventHandler(PeerEventHandler handler) {
  impl_->engine->setPeerEventHandler(std::move(handler));
}

bool Agent::progress() { return impl_->engine->progress(); }

}  // namespace kvx
