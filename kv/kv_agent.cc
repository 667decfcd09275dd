#include "kvx/kv_agent.h"

#include "kv/kv_agent_impl.h"

namespace kvx {

using namespace kv::handoff;

KvAgent::KvAgent(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KvAgent::~KvAgent() = default;

Result<std::unique_ptr<KvAgent>> KvAgent::create(KvAgentOptions options) {
  KVX_ASSIGN_OR_RETURN(auto impl, Impl::create(std::move(options)));
  return std::unique_ptr<KvAgent>(new KvAgent(std::move(impl)));
}

Status KvAgent::shutdown(Deadline deadline, const std::string& reason) {
  return impl_->shutdown(deadline, reason);
}

const std::string& KvAgent::name() const { return impl_->options.agent.name; }
KvRole KvAgent::role() const { return impl_->options.role; }
std::string KvAgent::listenAddress() const { return impl_->agent->listenAddress(); }
Agent& KvAgent::agent() { return *impl_->agent; }

Result<std::string> KvAgent::connect(const std::string& address, Deadline deadline) {
  return impl_->connect(address, deadline);
}

std::vector<KvPeerStatus> KvAgent::peers() const {
  auto views =
      impl_->call<std::vector<KvPeerStatus>>([this]() -> Result<std::vector<KvPeerStatus>> {
        std::vector<KvPeerStatus> out;
        std::vector<KvPeerStatus> scheduled;
        if (impl_->sides->prefill()) scheduled = impl_->sides->prefill()->peerViews();
        for (const auto& [name, entry] : impl_->peers.all()) {
          KvPeerStatus s;
          s.name = name;
          s.role = entry.role;
          s.compatible = entry.compatible;
          s.reason = entry.reason;
          s.totalBlocks = entry.totalBlocks;
          s.kvHeads = entry.kvHeads;
          for (const auto& v : scheduled) {
            if (v.name == name) {
              s.freeBlocks = v.freeBlocks;
              s.inFlightBytes = v.inFlightBytes;
            }
          }
          s.dataPath = impl_->agent->dataPathDescription(name).valueOr(std::string());
          s.readyCpuNs = impl_->local.port->readyCpuNs(name);
          out.push_back(std::move(s));
        }
        return out;
      });
  return views.valueOr(std::vector<KvPeerStatus>{});
}

const KvPoolInfo& KvAgent::pool() const { return impl_->local.pool->info(); }

KvPoolUsage KvAgent::usage() const {
  auto usage = impl_->call<KvPoolUsage>([this]() -> Result<KvPoolUsage> {
    const auto stats = impl_->local.allocator->stats();
    KvPoolUsage u;
    u.totalBlocks = impl_->local.allocator->totalBlocks();
    u.freeBlocks = stats.freeBlocks;
    u.freeExtents = stats.freeExtents;
    u.largestFreeExtent = stats.largestFreeExtent;
    if (impl_->sides->decode()) {
      u.cachedPrefixBlocks = impl_->sides->decode()->prefixCache().cachedBlocks();
      u.heldBlocks = impl_->sides->decode()->heldBlocks();
    }
    u.peersReadyCpuNs = impl_->local.port->readyCpuTotalNs();
    if (impl_->local.canary) u.lateWrites = impl_->local.canary->lateWrites();
    return u;
  });
  return usage.valueOr(KvPoolUsage{});
}

Result<std::span<std::byte>> KvAgent::segment(std::uint64_t block, std::uint32_t layer,
                                              std::uint32_t kv) const {
  return impl_->local.pool->segment(block, layer, kv);
}

Status KvAgent::writeSegment(std::uint64_t block, std::uint32_t layer, std::uint32_t kv,
                             std::span<const std::byte> bytes, Deadline deadline) {
  return impl_->local.pool->writeSegment(block, layer, kv, bytes, deadline);
}

Status KvAgent::readSegment(std::uint64_t block, std::uint32_t layer, std::uint32_t kv,
                            std::span<std::byte> out, Deadline deadline) const {
  return impl_->local.pool->readSegment(block, layer, kv, out, deadline);
}

Status KvAgent::writeSegments(std::span<const KvSegmentRef> refs, std::span<const std::byte> bytes,
                              Deadline deadline) {
  return impl_->local.pool->writeSegments(refs, bytes, deadline);
}

Status KvAgent::readSegments(std::span<const KvSegmentRef> refs, std::span<std::byte> out,
                             Deadline deadline) const {
  return impl_->local.pool->readSegments(refs, out, deadline);
}

Result<std::vector<std::uint64_t>> KvAgent::allocateBlocks(std::uint64_t count) {
  return impl_->call<std::vector<std::uint64_t>>(
      [this, count]() -> Result<std::vector<std::uint64_t>> {
        KVX_ASSIGN_OR_RETURN(auto extents, impl_->local.allocator->allocate(count));
        return kv::expandExtents(extents);
      });
}

Status KvAgent::freeBlocks(std::span<const std::uint64_t> blocks) {
  std::vector<std::uint64_t> copy(blocks.begin(), blocks.end());
  return impl_->callStatus(
      [this, copy] { return impl_->local.allocator->free(kv::compressBlocks(copy)); });
}

namespace {

Status wrongRole(std::string_view call, KvRole role) {
  return failedPrecondition(std::string(call) + " is for " +
                            (role == KvRole::kPrefill ? "decode" : "prefill") +
                            " agents; this is a " + std::string(toString(role)) + " agent");
}

}  // namespace

Status KvAgent::submit(const KvRequestSpec& request) {
  if (!impl_->sides->prefill()) return wrongRole("submit", role());
  if (!impl_->accepting.load()) return failedPrecondition("the agent is shutting down");
  return impl_->callStatus([this, request] { return impl_->sides->prefill()->submit(request); });
}

Status KvAgent::layerReady(const std::string& id, std::uint32_t layer) {
  if (!impl_->sides->prefill()) return wrongRole("layerReady", role());
  return impl_->callStatus(
      [this, id, layer] { return impl_->sides->prefill()->layerReady(id, layer); });
}

Status KvAgent::cancel(const std::string& id) {
  if (!impl_->sides->prefill()) return wrongRole("cancel", role());
  return impl_->callStatus([this, id] {
    return impl_->sides->prefill()->cancel(id, cancelled("request '" + id + "' cancelled"));
  });
}

Result<KvRequestStatus> KvAgent::status(const std::string& id) const {
  auto s = impl_->sides->board().get(id);
  if (!s) return notFound("request '" + id + "' is not known (never submitted, or forgotten)");
  return *s;
}

Result<KvRequestStatus> KvAgent::wait(const std::string& id, Deadline deadline) {
  KVX_ASSIGN_OR_RETURN(KvRequestStatus s, impl_->sides->board().waitTerminal(id, deadline));
  if (s.state == KvRequestState::kFailed) return s.status;
  return s;
}

Result<std::uint64_t> KvAgent::giveBackHeldBlocks(const std::string& peer) {
  if (!impl_->sides->decode()) return wrongRole("giveBackHeldBlocks", role());
  return impl_->call<std::uint64_t>(
      [this, peer]() { return impl_->sides->decode()->giveBackHeld(peer); });
}

void KvAgent::cancelWaits() {
  impl_->sides->board().cancelWaits(cancelled("the agent is closing"));
}

Result<KvArrival> KvAgent::nextArrival(Deadline deadline) {
  if (!impl_->sides->decode()) return wrongRole("nextArrival", role());
  return impl_->sides->board().nextArrival(deadline);
}

Status KvAgent::waitLayer(const std::string& id, std::uint32_t layer, Deadline deadline) {
  if (!impl_->sides->decode()) return wrongRole("waitLayer", role());
  if (layer >= impl_->local.pool->info().layers) {
    return invalidArgument("layer " + std::to_string(layer) + " is outside the model's " +
                           std::to_string(impl_->local.pool->info().layers));
  }
  return impl_->sides->board().waitLayer(id, layer, deadline);
}

Status KvAgent::consume(const std::string& id) {
  if (!impl_->sides->decode()) return wrongRole("consume", role());
  return impl_->callStatus([this, id] { return impl_->sides->decode()->consume(id); });
}

Status KvAgent::release(const std::string& id) {
  if (!impl_->sides->decode()) return wrongRole("release", role());
  return impl_->callStatus([this, id] { return impl_->sides->decode()->release(id); });
}

Status KvAgent::dropPrefixCache() {
  if (!impl_->sides->decode()) return wrongRole("dropPrefixCache", role());
  return impl_->callStatus([this] { return impl_->sides->decode()->dropPrefixCache(); });
}

}  // namespace kvx
