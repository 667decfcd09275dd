#pragma once

// StagedPipeline: one staged move of GPU memory through pinned host buffers, for a UCX that
// cannot move GPU memory itself. The move is a list of device pieces, numbered as one stream
// of bytes and cut into chunks of the staging pool's chunk size (a chunk may gather several
// small pieces, a large piece spans several chunks). Each of the pool's N buffers carries one
// chunk at a time:
//   sending   (kDeviceToWire): device -> buffer (CopyEngine, device to host) -> wire
//   receiving (kWireToDevice): wire -> buffer -> device (CopyEngine, host to device)
// and takes the next chunk as soon as its wire operation (sending) or its copy (receiving)
// completes, so the copies of some chunks overlap the wire operations of others, with at
// most N chunks in flight.
//
// The first error (a copy, a wire operation) or cancel() stops the move: no new chunk starts,
// and the move is reported failed only after every copy and wire operation it issued has
// completed, so no byte moves after the report and the pool is free again.
//
// Ownership: the caller keeps the returned pointer as long as it wants to wait or cancel;
// the move keeps itself alive while operations are in flight. It holds the pool for its
// whole duration (one move per pool at a time). REQUIRES: the copy engine, the wire and the
// pieces' memory outlive the move (until `done` has fired or wait() returned its outcome).
// Threads: any thread may call any member; the pipeline serialises its own events without
// holding a lock while it calls the copy engine, the wire or `done`.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/gpu/copy_engine.h"
#include "engine/gpu/staged_wire.h"
#include "engine/gpu/staging_pool.h"
#include "kvx/result.h"
#include "sync/mutex.h"

namespace kvx::engine::gpu {

enum class StagedDirection : std::uint8_t {
  kDeviceToWire,  // sending
  kWireToDevice,  // receiving
};

struct DevicePiece {
  void* address = nullptr;  // device memory (any address the copy engine accepts)
  std::size_t length = 0;
};

struct StagedMoveSpec {
  StagedDirection direction = StagedDirection::kDeviceToWire;
  std::vector<DevicePiece> pieces;
  // What the pieces are, for errors ("GPU region 'kv.t0' on CUDA device 0"); may be empty.
  std::string subject;
};

struct StagedMoveStats {
  std::size_t chunks = 0;           // of the move
  std::size_t chunksDone = 0;       // copied and carried
  std::uint64_t bytesDone = 0;      // in completed chunks
  std::uint64_t copiesIssued = 0;   // one per (chunk, piece) intersection
  std::uint64_t wireOpsIssued = 0;  // one per chunk
};

class StagedPipeline : public std::enable_shared_from_this<StagedPipeline> {
 public:
  using DoneCallback = std::function<void(Status)>;

  // Starts the move; `done` (optional) fires exactly once with its outcome, possibly before
  // start() returns, and before finished() and wait() report it (so `done` must not wait() on
  // its own move: use the status it is given). INVALID_ARGUMENT for a null piece;
  // FAILED_PRECONDITION when the pool serves another move. An empty move completes at once.
  static Result<std::shared_ptr<StagedPipeline>> start(StagedMoveSpec spec,
                                                       std::shared_ptr<StagingPool> staging,
                                                       CopyEngine& copies, StagedWire& wire,
                                                       DoneCallback done = {});

  // Stops the move (CANCELLED) unless it already finished; returns at once: wait() for the
  // in-flight operations to drain.
  void cancel();

  bool finished() const;
  // The move's outcome, or TIMED_OUT if it has not finished by `deadline` (it goes on).
  Status wait(std::chrono::steady_clock::time_point deadline) const;
  StagedMoveStats stats() const;

  // Public for make_shared; use start().
  struct Private {};
  StagedPipeline(Private, StagedMoveSpec spec, std::shared_ptr<StagingPool> staging,
                 CopyEngine& copies, StagedWire& wire, DoneCallback done);
  ~StagedPipeline();

 private:
  enum class EventKind : std::uint8_t { kStart, kCopyDone, kWireDone, kCancel };
  struct Event {
    EventKind kind;
    std::size_t slot = 0;
    Status status;
  };
  enum class Stage : std::uint8_t { kIdle, kCopying, kOnWire };
  struct Slot {  // one staging buffer and the chunk it carries
    Stage stage = Stage::kIdle;
    std::size_t chunk = 0;
    std::uint64_t offset = 0;  // of the chunk in the move
    std::size_t length = 0;
    std::size_t copiesPending = 0;
  };

  // Queues an event; the first thread to find no runner handles events until none is left.
  void submit(Event event);
  void handle(Event& event);
  void fill();
  void issueCopies(std::size_t slot);
  void postWire(std::size_t slot);
  void chunkDone(std::size_t slot);
  void fail(Status status, std::size_t slot, const char* stage);
  void finishIfDone();

  // Immutable after construction.
  const StagedMoveSpec spec_;
  const std::shared_ptr<StagingPool> staging_;
  CopyEngine& copies_;
  StagedWire& wire_;
  std::vector<std::uint64_t> pieceStarts_;  // offset of each piece in the move
  std::uint64_t totalBytes_ = 0;
  std::size_t chunkCount_ = 0;

  // Runner-owned: touched only by the thread that runs submit()'s loop.
  DoneCallback done_;
  std::vector<Slot> slots_;
  std::size_t nextChunk_ = 0;
  std::size_t opsInFlight_ = 0;
  Status error_;  // the first error; stops the move
  bool reported_ = false;

  mutable sync::Mutex mutex_;
  mutable std::condition_variable finishedCv_;
  std::deque<Event> events_ KVX_GUARDED_BY(mutex_);
  bool running_ KVX_GUARDED_BY(mutex_) = false;  // a thread is handling events
  std::optional<Status> outcome_ KVX_GUARDED_BY(mutex_);
  StagedMoveStats stats_ KVX_GUARDED_BY(mutex_);
};

}  // namespace kvx::engine::gpu
