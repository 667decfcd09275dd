// measureAgentAbort (bench/kv/control/abort_measure.h): Agent::cancel of a transfer in
// flight, then one more transfer to the same peer.
#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <optional>
#include <thread>

#include "bench/kv/control/abort_measure.h"
#include "bench/kv/control/control_agents.h"
#include "bench/kv/control/control_clock.h"
#include "bench/kv/control/control_output.h"
#include "bench/kv/control/memory_room.h"
#include "kvx/agent.h"
#include "sync/mutex.h"

namespace kvx::bench {
namespace {

constexpr const char* kAgentAbortGroup = "abort";
constexpr std::uint64_t kSegment = 1u << 20;

// How a post ended; shared with its callback, which may outlive the measuring frame if the
// transfer is still pending when the agents are destroyed.
struct Finish {
  sync::Mutex mutex;
  std::condition_variable changed;
  std::optional<Clock::time_point> at KVX_GUARDED_BY(mutex);
  TransferStatus status KVX_GUARDED_BY(mutex);
};

// Anonymous memory, populated; unmapped when destroyed (after the agents that use it).
struct Mapping {
  void* address = MAP_FAILED;
  std::uint64_t length = 0;
  ~Mapping() {
    if (address != MAP_FAILED) ::munmap(address, length);
  }
};

Result<RegionId> allocatedId(Agent& agent, const std::string& name, std::uint64_t bytes) {
  KVX_ASSIGN_OR_RETURN(AllocatedRegion region,
                       agent.allocateMemory({.name = name, .length = bytes}));
  return region.id;
}

// One try: `transfer` posted from a second thread, cancelled `delayMs` later.
struct CancelTry {
  double postMs = 0;      // how long post() took
  double returnedMs = 0;  // how long cancel() took
  double finishedMs = 0;  // cancel() until the completion callback
  TransferStatus ended;
};

Result<CancelTry> cancelDuringPost(Agent& agent, TransferId transfer, double delayMs) {
  auto finish = std::make_shared<Finish>();
  std::atomic<bool> posting{false};
  Status posted;
  CancelTry out;
  std::thread poster([&] {
    const auto started = Clock::now();
    posting.store(true);
    posted = agent.post(transfer, [finish](TransferId, const TransferStatus& s) {
      sync::MutexLock lock(finish->mutex);
      finish->at = Clock::now();
      finish->status = s;
      finish->changed.notify_all();
    });
    out.postMs = msSince(started);
  });
  while (!posting.load()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(delayMs));
  const auto cancelAt = Clock::now();
  const Status cancelStatus = agent.cancel(transfer);
  out.returnedMs = msSince(cancelAt);
  poster.join();
  KVX_RETURN_IF_ERROR(posted);
  sync::UniqueLock lock(finish->mutex);
  if (!finish->changed.wait_until(
          lock.native(), deadlineIn(std::chrono::seconds(10)),
          [&]() KVX_REQUIRES(finish->mutex) { return finish->at.has_value(); })) {
    return timedOut("the cancelled transfer did not finish within 10 s (cancel: " +
                    cancelStatus.toString() + ")");
  }
  out.finishedMs = msBetween(cancelAt, *finish->at);
  out.ended = finish->status;
  return out;
}

// A cancel that outlasts AgentOptions::cancelGrace resets the peer's endpoint. A new
// transfer to the peer shows that the link works again, and lets the new endpoint's wire-up
// finish before the agents go: destroying the UCX worker in the middle of it aborted the
// process (UCX 1.13, shm: "ucp_request.c:684 Assertion ... got REP message").
Result<double> transferAfter(Agent& agent, const std::string& peer, RegionId local,
                             RegionId remote) {
  TransferRequest small{.peer = peer, .op = TransferOp::kWrite};
  small.segments.push_back({{local, 0, kSegment}, {remote, 0, kSegment}});
  const auto started = Clock::now();
  KVX_ASSIGN_OR_RETURN(TransferId id, agent.submit(small));
  KVX_RETURN_IF_ERROR(agent.wait(id, deadlineIn(std::chrono::seconds(10))));
  const double ms = msSince(started);
  KVX_RETURN_IF_ERROR(agent.release(id));
  return ms;
}

}  // namespace

std::vector<ControlFigure> measureAgentAbort(const std::string& transport, std::uint64_t bytes,
                                             AbortTarget target) {
  const bool registered = target == AbortTarget::kRegistered;
  const std::string name = fmt::format("Agent::cancel {} write, {}", bytesLabel(bytes),
                                       registered ? "registered" : "allocated");
  auto fail = [&](const Status& s) {
    return std::vector<ControlFigure>{
        failedFigure(kAgentAbortGroup, name, transport, s.toString())};
  };
  if (Status room = checkMemoryRoom(2 * bytes); !room.isOk()) {
    return {unmeasuredFigure(kAgentAbortGroup, name, transport, room.message())};
  }
  Mapping mapping;  // outlives the agents below
  if (registered) {
    mapping.length = bytes;
    mapping.address = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (mapping.address == MAP_FAILED) {
      return {unmeasuredFigure(kAgentAbortGroup, name, transport,
                               "mmap of " + bytesLabel(bytes) + " failed")};
    }
  }
  auto initiator = Agent::create(controlAgentOptions("control-abort-initiator", transport));
  if (!initiator.isOk()) return fail(initiator.status());
  auto targetAgent = Agent::create(controlAgentOptions("control-abort-target", transport));
  if (!targetAgent.isOk()) return fail(targetAgent.status());
  Agent& a = **initiator;
  auto local = a.allocateMemory({.name = "control.abort.local", .length = bytes});
  if (!local.isOk()) return fail(local.status());
  Result<RegionId> remote =
      registered
          ? (*targetAgent)
                ->registerMemory(
                    {.name = "control.abort.remote", .address = mapping.address, .length = bytes})
          : allocatedId(**targetAgent, "control.abort.remote", bytes);
  if (!remote.isOk()) return fail(remote.status());
  auto peer = a.connect((*targetAgent)->listenAddress());
  if (!peer.isOk()) return fail(peer.status());
  TransferRequest request{.peer = *peer, .op = TransferOp::kWrite};
  for (std::uint64_t offset = 0; offset < bytes; offset += kSegment) {
    const std::uint64_t length = std::min(kSegment, bytes - offset);
    request.segments.push_back({{local->id, offset, length}, {*remote, offset, length}});
  }
  auto transfer = a.createTransfer(request);
  if (!transfer.isOk()) return fail(transfer.status());

  // Twice: the first run also readies the peer's memory, which later runs do not pay, and
  // the emulated path's speed varies from run to run: the faster run sets the cancel time.
  double fullMs = 0;
  for (int run = 0; run < 2; ++run) {
    const auto warmStart = Clock::now();
    if (Status s = a.post(*transfer); !s.isOk()) return fail(s);
    if (Status s = a.wait(*transfer, deadlineIn(std::chrono::seconds(60))); !s.isOk()) {
      return fail(s);
    }
    fullMs = run == 0 ? msSince(warmStart) : std::min(fullMs, msSince(warmStart));
  }

  // On shm into UCX-allocated memory post() itself makes the copies, and a cancel() that
  // comes while it runs can only act once it returns: try again sooner, up to three times.
  std::string missed;
  int attempt = 0;
  for (double fraction : {0.25, 0.1, 0.02}) {
    ++attempt;
    auto once = cancelDuringPost(a, *transfer, fullMs * fraction);
    if (!once.isOk()) return fail(once.status());
    auto after = transferAfter(a, *peer, local->id, *remote);
    if (!after.isOk()) {
      return fail(after.status().withContext("a 1 MiB transfer to the peer after the cancel"));
    }
    const std::string context = fmt::format(
        "cancel {:.1f} ms after post (try {}), post() returned in {:.1f} ms; whole "
        "transfer {:.1f} ms",
        fullMs * fraction, attempt, once->postMs, fullMs);
    if (once->ended.state == TransferState::kDone) {
      missed = context + (once->postMs > fullMs * fraction
                              ? "; post() had not returned when cancel() was called"
                              : "");
      continue;
    }
    const std::string ending(toString(once->ended.status.code()));
    std::vector<ControlFigure> out{
        measuredFigure(kAgentAbortGroup, name + ": returned", transport, once->returnedMs, "ms", 1,
                       context),
        measuredFigure(
            kAgentAbortGroup, name + ": -> completion", transport, once->finishedMs, "ms", 1,
            fmt::format("ended {}; a 1 MiB transfer to the peer next: {:.1f} ms", ending, *after))};
    if (once->ended.status.code() != StatusCode::kCancelled) {
      out.back().failed = true;
      out.back().detail += " (expected CANCELLED): " + once->ended.status.toString();
    }
    return out;
  }
  return {unmeasuredFigure(
      kAgentAbortGroup, name, transport,
      "3 tries, each transfer was DONE before cancel() could act (last: " + missed + ")")};
}

}  // namespace kvx::bench
