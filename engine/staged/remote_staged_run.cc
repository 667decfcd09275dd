#include "engine/staged/remote_staged_run.h"

#include <algorithm>

#include "engine/transport/countdown_completion.h"

namespace kvx::engine {
namespace {

RemotePart partOf(const TransferPlan& plan, const PlannedOp& op, std::uint64_t into,
                  std::uint64_t length, void* local, const TransportMemory* localMemory) {
  const RemoteRegion& remote = *plan.remoteRegions[op.remoteSlot];
  return RemotePart{local, localMemory, remote.info.id,
                    op.remoteAddress - remote.info.address + into, length};
}

// Packs parts into pieces of at most one slot (and kMaxStagingRanges parts) each, in order.
class PiecePacker {
 public:
  explicit PiecePacker(std::uint64_t slotBytes) : slotBytes_(slotBytes) {}

  // Bytes the next part may have: what is left of the current piece, or a whole slot when
  // the next part starts another.
  std::uint64_t room() const {
    return full() || pieces_.empty() ? slotBytes_ : slotBytes_ - inPiece_;
  }
  // Adds a part of at most room() bytes.
  void add(const RemotePart& part) {
    if (pieces_.empty() || inPiece_ == slotBytes_ ||
        pieces_.back().parts.size() == kMaxStagingRanges) {
      pieces_.emplace_back();
      inPiece_ = 0;
    }
    pieces_.back().parts.push_back(part);
    inPiece_ += part.length;
  }
  // Whether the current piece is full: the next part starts another.
  bool full() const {
    return !pieces_.empty() &&
           (inPiece_ == slotBytes_ || pieces_.back().parts.size() == kMaxStagingRanges);
  }
  std::size_t pieces() const { return pieces_.size(); }
  std::vector<RemotePiece> take() { return std::move(pieces_); }

 private:
  const std::uint64_t slotBytes_;
  std::vector<RemotePiece> pieces_;
  std::uint64_t inPiece_ = 0;
};

}  // namespace

// The pipeline's wire for the both-staged part: a chunk in one of this side's staging
// buffers goes on through the window in pieces of at most a slot, each packing the parts of
// the operations the chunk intersects (with the default sizes, a chunk is one piece); the
// chunk is done when all of them are.
class RemoteStagedRun::ChunkWire final : public gpu::StagedWire {
 public:
  ChunkWire(const TransferPlan& plan, RemoteStagedWire& wire, const StagingLease& lease)
      : plan_(plan), wire_(wire), lease_(lease) {
    std::uint64_t at = 0;
    for (const PlannedOp& op : plan_.bothStagedOps) {
      starts_.push_back(at);
      at += op.length;
    }
  }

  void postWire(std::byte* staging, std::uint64_t offset, std::size_t length,
                gpu::WireCallback done) override {
    const TransportMemory* registration = lease_.registrationOf(staging);
    if (registration == nullptr || length == 0) {
      done(internalError("staged chunk at byte " + std::to_string(offset) +
                         " is not in a registered staging buffer"));
      return;
    }
    PiecePacker packer(wire_.slotBytes());
    std::size_t index = static_cast<std::size_t>(
        std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin() - 1);
    std::size_t placed = 0;
    while (placed < length && index < plan_.bothStagedOps.size()) {
      const PlannedOp& op = plan_.bothStagedOps[index];
      const std::uint64_t into = offset + placed - starts_[index];
      const std::uint64_t take =
          std::min({op.length - into, std::uint64_t{length - placed}, packer.room()});
      packer.add(partOf(plan_, op, into, take, staging + placed, registration));
      placed += take;
      if (into + take == op.length) ++index;
    }
    std::vector<RemotePiece> pieces = packer.take();
    if (placed != length) {
      done(internalError("staged chunk [" + std::to_string(offset) + "+" + std::to_string(length) +
                         ") runs past the staged operations"));
      return;
    }
    struct Countdown {
      GroupOutcome group;
      gpu::WireCallback done;
    };
    auto countdown = std::make_shared<Countdown>();
    countdown->group.expect(pieces.size());
    countdown->done = std::move(done);
    for (const RemotePiece& piece : pieces) {
      wire_.post(piece, [countdown](Status status) {
        if (auto outcome = countdown->group.arrive(std::move(status))) {
          countdown->done(std::move(*outcome));
        }
      });
    }
  }

 private:
  const TransferPlan& plan_;
  RemoteStagedWire& wire_;
  const StagingLease& lease_;
  std::vector<std::uint64_t> starts_;
};

Result<std::unique_ptr<RemoteStagedRun>> RemoteStagedRun::create(const StagingContext& context,
                                                                 const TransferPlan& plan,
                                                                 TransferOp op,
                                                                 std::shared_ptr<RemotePeer> peer,
                                                                 std::shared_ptr<PeerLink> link,
                                                                 std::function<void()> notify) {
  std::shared_ptr<const RemotePeer::Window> window = peer->stagingWindow();
  if (window == nullptr) {
    return failedPrecondition("peer '" + peer->name() + "' publishes no staging window");
  }
  KVX_ASSIGN_OR_RETURN(const RemoteKey* windowKey, link->key(window->region));
  std::unique_ptr<RemoteStagedRun> run(new RemoteStagedRun(context, plan, op));
  if (!plan.bothStagedOps.empty()) {
    KVX_ASSIGN_OR_RETURN(run->copies_, context.service->copyEngine(plan.stagedDevice));
    KVX_ASSIGN_OR_RETURN(run->lease_, context.service->acquire());
  }
  RemoteStagedWire::Config config;
  config.peer = peer;
  config.link = std::move(link);
  config.window = std::move(window);
  config.windowKey = windowKey;
  config.write = op == TransferOp::kWrite;
  config.wireId = context.client->nextWireId();
  config.requestHeader = context.requestHeader;
  config.replyTimeout = context.replyTimeout;
  config.notify = std::move(notify);
  run->wireId_ = config.wireId;
  run->wire_ = std::make_shared<RemoteStagedWire>(std::move(config));
  context.client->add(run->wireId_, peer->name(), run->wire_);
  if (run->lease_) run->chunkWire_ = std::make_unique<ChunkWire>(plan, *run->wire_, *run->lease_);
  return run;
}

RemoteStagedRun::RemoteStagedRun(const StagingContext& context, const TransferPlan& plan,
                                 TransferOp op)
    : context_(context), plan_(plan), op_(op) {}

RemoteStagedRun::~RemoteStagedRun() {
  // The run reported (or never began): no piece is in flight on the wire.
  if (wireId_ != 0) context_.client->remove(wireId_);
  pipeline_.reset();
  chunkWire_.reset();
  if (lease_) context_.service->release(std::move(lease_));
}

Status RemoteStagedRun::begin(std::function<void(Status)> done) {
  const bool host = !plan_.remoteStagedOps.empty();
  const bool both = !plan_.bothStagedOps.empty();
  {
    sync::MutexLock lock(mutex_);
    done_ = std::move(done);
    partsLeft_ = (host ? 1 : 0) + (both ? 1 : 0);
    hostReported_ = !host;
  }
  if (both) {
    gpu::StagedMoveSpec spec;
    spec.direction = op_ == TransferOp::kWrite ? gpu::StagedDirection::kDeviceToWire
                                               : gpu::StagedDirection::kWireToDevice;
    spec.subject = describeStagedSource(plan_);
    for (const PlannedOp& op : plan_.bothStagedOps) {
      spec.pieces.push_back(gpu::DevicePiece{op.local, static_cast<std::size_t>(op.length)});
    }
    auto started =
        gpu::StagedPipeline::start(std::move(spec), lease_->pool, *copies_, *chunkWire_,
                                   [this](Status status) { partDone(std::move(status)); });
    if (!started.isOk()) {
      sync::MutexLock lock(mutex_);
      done_ = nullptr;
      return started.status();
    }
    sync::MutexLock lock(mutex_);
    pipeline_ = std::move(started).value();
  }
  if (host) feed();
  return Status::ok();
}

void RemoteStagedRun::cancel() {
  std::shared_ptr<gpu::StagedPipeline> pipeline;
  {
    sync::MutexLock lock(mutex_);
    cancelled_ = true;
    if (error_.isOk()) error_ = cancelled("staged move through the peer's window cancelled");
    pipeline = pipeline_;
  }
  wire_->cancel();
  if (pipeline) pipeline->cancel();
  feed();  // reports the host part if nothing of it is in flight
}

void RemoteStagedRun::feed() {
  std::vector<RemotePiece> pieces;
  bool reportHost = false;
  {
    sync::MutexLock lock(mutex_);
    if (hostReported_) return;
    const std::vector<PlannedOp>& ops = plan_.remoteStagedOps;
    // Each piece packs the next operations (or parts of one) up to a slot.
    PiecePacker packer(wire_->slotBytes());
    while (!cancelled_ && error_.isOk() && nextOp_ < ops.size()) {
      if (packer.full() || packer.pieces() == 0) {
        if (hostInFlight_ + packer.pieces() >= wire_->slots()) break;
      }
      const PlannedOp& op = ops[nextOp_];
      const std::uint64_t take = std::min(op.length - nextOffset_, packer.room());
      packer.add(partOf(plan_, op, nextOffset_, take, op.local + nextOffset_, op.localMemory));
      nextOffset_ += take;
      if (nextOffset_ == op.length) {
        ++nextOp_;
        nextOffset_ = 0;
      }
    }
    pieces = packer.take();
    hostInFlight_ += pieces.size();
    const bool stopped = cancelled_ || !error_.isOk() || nextOp_ == ops.size();
    if (pieces.empty() && hostInFlight_ == 0 && stopped) {
      hostReported_ = true;
      reportHost = true;
    }
  }
  for (const RemotePiece& piece : pieces) {
    wire_->post(piece, [this](Status status) { hostPieceDone(std::move(status)); });
  }
  if (reportHost) partDone(Status::ok());
}

void RemoteStagedRun::hostPieceDone(Status status) {
  {
    sync::MutexLock lock(mutex_);
    --hostInFlight_;
    if (!status.isOk() && error_.isOk()) error_ = std::move(status);
  }
  feed();
}

void RemoteStagedRun::partDone(Status status) {
  std::function<void(Status)> done;
  Status outcome;
  {
    sync::MutexLock lock(mutex_);
    if (!status.isOk() && error_.isOk()) error_ = std::move(status);
    if (--partsLeft_ > 0) return;
    done = std::move(done_);
    done_ = nullptr;
    outcome = error_;
  }
  if (done) done(std::move(outcome));
}

}  // namespace kvx::engine
