#include "engine/gpu/staged_pipeline.h"

#include <algorithm>

namespace kvx::engine::gpu {

namespace {

const char* directionText(StagedDirection direction) {
  return direction == StagedDirection::kDeviceToWire ? "send" : "receive";
}

}  // namespace

Result<std::shared_ptr<StagedPipeline>> StagedPipeline::start(StagedMoveSpec spec,
                                                              std::shared_ptr<StagingPool> staging,
                                                              CopyEngine& copies, StagedWire& wire,
                                                              DoneCallback done) {
  if (staging == nullptr) return invalidArgument("a staged move needs a staging pool");
  for (std::size_t i = 0; i < spec.pieces.size(); ++i) {
    if (spec.pieces[i].address == nullptr && spec.pieces[i].length > 0) {
      return invalidArgument("staged move piece " + std::to_string(i) + " (" +
                             std::to_string(spec.pieces[i].length) + " bytes) has no address");
    }
  }
  if (!staging->acquire()) {
    return failedPrecondition("staging pool (" + staging->describe() +
                              ") already serves another staged move");
  }
  auto pipeline = std::make_shared<StagedPipeline>(Private{}, std::move(spec), std::move(staging),
                                                   copies, wire, std::move(done));
  pipeline->submit(Event{EventKind::kStart});
  return pipeline;
}

StagedPipeline::StagedPipeline(Private, StagedMoveSpec spec, std::shared_ptr<StagingPool> staging,
                               CopyEngine& copies, StagedWire& wire, DoneCallback done)
    : spec_(std::move(spec)),
      staging_(std::move(staging)),
      copies_(copies),
      wire_(wire),
      done_(std::move(done)),
      slots_(staging_->count()) {
  pieceStarts_.reserve(spec_.pieces.size());
  for (const DevicePiece& piece : spec_.pieces) {
    pieceStarts_.push_back(totalBytes_);
    totalBytes_ += piece.length;
  }
  const std::size_t chunk = staging_->chunkBytes();
  chunkCount_ = static_cast<std::size_t>((totalBytes_ + chunk - 1) / chunk);
  stats_.chunks = chunkCount_;
}

StagedPipeline::~StagedPipeline() {
  // Only reachable once no operation holds a reference, i.e. after the move reported.
  if (!reported_) staging_->releaseToPool();
}

void StagedPipeline::cancel() { submit(Event{EventKind::kCancel}); }

bool StagedPipeline::finished() const {
  sync::MutexLock lock(mutex_);
  return outcome_.has_value();
}

Status StagedPipeline::wait(std::chrono::steady_clock::time_point deadline) const {
  sync::UniqueLock lock(mutex_);
  if (!finishedCv_.wait_until(lock.native(), deadline,
                              [&]() KVX_REQUIRES(mutex_) { return outcome_.has_value(); })) {
    return timedOut("staged " + std::string(directionText(spec_.direction)) + " of " +
                    std::to_string(totalBytes_) + " bytes did not finish by its deadline (" +
                    std::to_string(stats_.chunksDone) + " of " + std::to_string(chunkCount_) +
                    " chunks done)");
  }
  return *outcome_;
}

StagedMoveStats StagedPipeline::stats() const {
  sync::MutexLock lock(mutex_);
  return stats_;
}

void StagedPipeline::submit(Event event) {
  {
    sync::MutexLock lock(mutex_);
    events_.push_back(std::move(event));
    if (running_) return;
    running_ = true;
  }
  // The runner may be the last holder of the move (the callback that brought it here).
  const std::shared_ptr<StagedPipeline> self = shared_from_this();
  for (;;) {
    Event next;
    {
      sync::MutexLock lock(mutex_);
      if (events_.empty()) {
        running_ = false;
        return;
      }
      next = std::move(events_.front());
      events_.pop_front();
    }
    handle(next);
  }
}

void StagedPipeline::handle(Event& event) {
  if (reported_) return;  // a late cancel
  switch (event.kind) {
    case EventKind::kStart: break;
    case EventKind::kCancel:
      if (error_.isOk()) {
        error_ = cancelled("staged " + std::string(directionText(spec_.direction)) +
                           " cancelled after " + std::to_string(stats().chunksDone) + " of " +
                           std::to_string(chunkCount_) + " chunks");
      }
      break;
    case EventKind::kCopyDone: {
      --opsInFlight_;
      Slot& slot = slots_[event.slot];
      if (!event.status.isOk()) fail(std::move(event.status), event.slot, "copy");
      if (--slot.copiesPending > 0) break;
      if (!error_.isOk()) {
        slot.stage = Stage::kIdle;
      } else if (spec_.direction == StagedDirection::kDeviceToWire) {
        postWire(event.slot);
      } else {
        chunkDone(event.slot);
      }
      break;
    }
    case EventKind::kWireDone:
      --opsInFlight_;
      if (!event.status.isOk()) fail(std::move(event.status), event.slot, "wire operation");
      if (!error_.isOk()) {
        slots_[event.slot].stage = Stage::kIdle;
      } else if (spec_.direction == StagedDirection::kDeviceToWire) {
        chunkDone(event.slot);
      } else {
        issueCopies(event.slot);
      }
      break;
  }
  fill();
  finishIfDone();
}

void StagedPipeline::fill() {
  const std::size_t chunkBytes = staging_->chunkBytes();
  for (std::size_t s = 0; s < slots_.size() && error_.isOk() && nextChunk_ < chunkCount_; ++s) {
    Slot& slot = slots_[s];
    if (slot.stage != Stage::kIdle) continue;
    slot.chunk = nextChunk_++;
    slot.offset = static_cast<std::uint64_t>(slot.chunk) * chunkBytes;
    slot.length =
        static_cast<std::size_t>(std::min<std::uint64_t>(chunkBytes, totalBytes_ - slot.offset));
    if (spec_.direction == StagedDirection::kDeviceToWire) {
      issueCopies(s);
    } else {
      postWire(s);
    }
  }
}

void StagedPipeline::issueCopies(std::size_t s) {
  Slot& slot = slots_[s];
  slot.stage = Stage::kCopying;
  // The chunk's intersections with the pieces (empty pieces contribute nothing).
  struct Segment {
    std::byte* device;
    std::size_t stagingOffset;
    std::size_t length;
  };
  std::vector<Segment> segments;
  // The chunk's first piece: the last one that starts at or before the chunk.
  std::size_t piece = static_cast<std::size_t>(
      std::upper_bound(pieceStarts_.begin(), pieceStarts_.end(), slot.offset) -
      pieceStarts_.begin() - 1);
  std::uint64_t inPiece = slot.offset - pieceStarts_[piece];
  std::size_t placed = 0;
  while (placed < slot.length) {
    const DevicePiece& p = spec_.pieces[piece];
    const std::size_t take =
        static_cast<std::size_t>(std::min<std::uint64_t>(p.length - inPiece, slot.length - placed));
    if (take > 0) {
      segments.push_back({static_cast<std::byte*>(p.address) + inPiece, placed, take});
    }
    placed += take;
    ++piece;
    inPiece = 0;
  }
  slot.copiesPending = segments.size();
  opsInFlight_ += segments.size();
  {
    sync::MutexLock lock(mutex_);
    stats_.copiesIssued += segments.size();
  }
  std::byte* buffer = staging_->buffer(s);
  const auto self = shared_from_this();
  for (const Segment& seg : segments) {
    CopyRequest request;
    request.length = seg.length;
    if (spec_.direction == StagedDirection::kDeviceToWire) {
      request.kind = CopyKind::kDeviceToHost;
      request.source = seg.device;
      request.destination = buffer + seg.stagingOffset;
    } else {
      request.kind = CopyKind::kHostToDevice;
      request.source = buffer + seg.stagingOffset;
      request.destination = seg.device;
    }
    copies_.copy(request, [self, s](Status status) {
      self->submit(Event{EventKind::kCopyDone, s, std::move(status)});
    });
  }
}

void StagedPipeline::postWire(std::size_t s) {
  Slot& slot = slots_[s];
  slot.stage = Stage::kOnWire;
  ++opsInFlight_;
  {
    sync::MutexLock lock(mutex_);
    ++stats_.wireOpsIssued;
  }
  const auto self = shared_from_this();
  wire_.postWire(staging_->buffer(s), slot.offset, slot.length, [self, s](Status status) {
    self->submit(Event{EventKind::kWireDone, s, std::move(status)});
  });
}

void StagedPipeline::chunkDone(std::size_t s) {
  Slot& slot = slots_[s];
  slot.stage = Stage::kIdle;
  sync::MutexLock lock(mutex_);
  ++stats_.chunksDone;
  stats_.bytesDone += slot.length;
}

void StagedPipeline::fail(Status status, std::size_t s, const char* stage) {
  if (!error_.isOk()) return;
  const Slot& slot = slots_[s];
  const std::string of = spec_.subject.empty() ? "" : " of " + spec_.subject;
  error_ = status.withContext("staged " + std::string(directionText(spec_.direction)) + of +
                              ", chunk " + std::to_string(slot.chunk) + " of " +
                              std::to_string(chunkCount_) + " [" + std::to_string(slot.offset) +
                              "+" + std::to_string(slot.length) + "), " + stage);
}

void StagedPipeline::finishIfDone() {
  if (opsInFlight_ > 0) return;
  if (error_.isOk() && nextChunk_ < chunkCount_) return;
  if (error_.isOk()) {
    for (const Slot& slot : slots_) {
      if (slot.stage != Stage::kIdle) return;
    }
  }
  reported_ = true;
  staging_->releaseToPool();  // before `done`, which may start the next move on the pool
  DoneCallback done = std::move(done_);
  done_ = nullptr;
  if (done) done(error_);
  // Only now: once wait() returns, nothing of the move runs any more.
  {
    sync::MutexLock lock(mutex_);
    outcome_ = error_;
  }
  finishedCv_.notify_all();
}

}  // namespace kvx::engine::gpu
