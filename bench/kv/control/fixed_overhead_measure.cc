#include "bench/kv/control/fixed_overhead_measure.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <optional>
#include <vector>

#include "bench/bare/bare_ucp_runner.h"
#include "bench/kv/bare_match.h"
#include "bench/kv/control/control_agents.h"
#include "bench/kv/control/control_clock.h"
#include "bench/kv/control/control_output.h"
#include "bench/kv/control/sample_stats.h"
#include "kvx/agent.h"
#include "sync/mutex.h"

namespace kvx::bench {
namespace {

constexpr const char* kFixedOverheadGroup = "fixed overhead";
constexpr double kAllowanceUs = 5;  // WORKLOADS.md: at most bare + 5 us
constexpr auto kEventDeadline = std::chrono::seconds(5);
// The "never sleeps" row: progress threads that spin this long after each event stay awake
// for the whole step. What it saves against the default row is the cost of waking a
// progress thread from its event fd.
constexpr std::chrono::microseconds kAwakeSpin = std::chrono::seconds(10);
constexpr std::uint64_t kAwakeRowBytes = 4096;

// The events of one try, stamped on the threads that see them. Shared with the handler and
// the callback, which may run after the measuring frame returned on a failure.
struct Events {
  sync::Mutex mutex;
  std::condition_variable changed;
  // The target's handler ran.
  std::optional<Clock::time_point> notified KVX_GUARDED_BY(mutex);
  // The initiator's completion callback ran.
  std::optional<Clock::time_point> done KVX_GUARDED_BY(mutex);
  TransferStatus ended KVX_GUARDED_BY(mutex);

  void reset() {
    sync::MutexLock lock(mutex);
    notified.reset();
    done.reset();
  }
  // Waits until the notification (and, if `needDone`, the completion) was seen; with
  // `drive`, by calling it in a loop (the caller drives the initiator's progress).
  bool await(bool needDone, Agent* drive) {
    const auto deadline = Clock::now() + kEventDeadline;
    const auto seen = [&]() KVX_REQUIRES(mutex) { return notified && (!needDone || done); };
    if (drive == nullptr) {
      sync::UniqueLock lock(mutex);
      return changed.wait_until(lock.native(), deadline, seen);
    }
    while (Clock::now() < deadline) {
      drive->progress();
      sync::MutexLock lock(mutex);
      if (seen()) return true;
    }
    return false;
  }
};

struct OverheadPair {
  std::unique_ptr<Agent> initiator;
  std::unique_ptr<Agent> target;
  std::string peer;
  std::shared_ptr<Events> events = std::make_shared<Events>();
  bool callerDriven = false;  // the initiator is in caller mode: the measuring thread drives it

  Agent* driven() const { return callerDriven ? initiator.get() : nullptr; }
};

Result<OverheadPair> connectOverheadPair(const std::string& transport,
                                         std::chrono::microseconds spin,
                                         bool callerDriven = false) {
  OverheadPair pair;
  pair.callerDriven = callerDriven;
  AgentOptions initiator = controlAgentOptions("control-fixed-initiator", transport);
  AgentOptions target = controlAgentOptions("control-fixed-target", transport);
  initiator.progressSpin = target.progressSpin = spin;
  if (callerDriven) initiator.progressMode = ProgressMode::kCaller;
  KVX_ASSIGN_OR_RETURN(pair.initiator, Agent::create(std::move(initiator)));
  KVX_ASSIGN_OR_RETURN(pair.target, Agent::create(std::move(target)));
  KVX_ASSIGN_OR_RETURN(pair.peer, pair.initiator->connect(pair.target->listenAddress()));
  pair.target->setNotificationHandler([events = pair.events](Notification) {
    const auto now = Clock::now();
    sync::MutexLock lock(events->mutex);
    events->notified = now;
    events->changed.notify_all();
  });
  return pair;
}

struct Latencies {
  std::vector<double> notifiedUs, doneUs;
};

double usBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::micro>(to - from).count();
}

// One S-byte WRITE with a notification, reposted `warmup + repeats` times.
Result<Latencies> oneBlockLatencies(OverheadPair& pair, std::uint64_t bytes,
                                    const FixedOverheadOptions& o) {
  Agent& a = *pair.initiator;
  const std::string suffix = std::to_string(bytes);
  KVX_ASSIGN_OR_RETURN(
      AllocatedRegion local,
      a.allocateMemory({.name = "control.fixed.local." + suffix, .length = bytes}));
  KVX_ASSIGN_OR_RETURN(
      AllocatedRegion remote,
      pair.target->allocateMemory({.name = "control.fixed.remote." + suffix, .length = bytes}));
  KVX_RETURN_IF_ERROR(awaitPeerRegion(a, pair.peer, remote.id, deadlineIn(kEventDeadline)));
  const std::vector<MemoryRange> localRange{MemoryRange{local.id, 0, bytes}};
  const std::vector<MemoryRange> remoteRange{MemoryRange{remote.id, 0, bytes}};
  const std::vector<std::uint32_t> first{0};
  KVX_ASSIGN_OR_RETURN(ListId localList, a.prepareLocalList(localRange));
  KVX_ASSIGN_OR_RETURN(ListId remoteList, a.prepareRemoteList(pair.peer, remoteRange));
  KVX_ASSIGN_OR_RETURN(TransferId transfer, a.makeTransfer(TransferOp::kWrite, localList, first,
                                                           remoteList, first, std::string("b")));
  Latencies out;
  auto events = pair.events;
  for (std::uint32_t i = 0; i < o.warmup + o.repeats; ++i) {
    events->reset();
    const auto posted = Clock::now();
    KVX_RETURN_IF_ERROR(a.post(transfer, [events](TransferId, const TransferStatus& s) {
      const auto now = Clock::now();
      sync::MutexLock lock(events->mutex);
      events->done = now;
      events->ended = s;
      events->changed.notify_all();
    }));
    if (!events->await(true, pair.driven())) {
      return timedOut(fmt::format("transfer {} of {}: no notification or completion within {} s", i,
                                  bytesLabel(bytes), kEventDeadline.count()));
    }
    sync::MutexLock lock(events->mutex);
    if (events->ended.state != TransferState::kDone) return events->ended.status;
    if (i < o.warmup) continue;
    out.notifiedUs.push_back(usBetween(posted, *events->notified));
    out.doneUs.push_back(usBetween(posted, *events->done));
  }
  KVX_RETURN_IF_ERROR(a.release(transfer));
  KVX_RETURN_IF_ERROR(a.releaseList(localList));
  KVX_RETURN_IF_ERROR(a.releaseList(remoteList));
  return out;
}

Result<std::vector<double>> notificationLatencies(OverheadPair& pair,
                                                  const FixedOverheadOptions& o) {
  std::vector<double> out;
  auto events = pair.events;
  for (std::uint32_t i = 0; i < o.warmup + o.repeats; ++i) {
    events->reset();
    const auto sent = Clock::now();
    KVX_RETURN_IF_ERROR(pair.initiator->sendNotification(pair.peer, "n"));
    if (!events->await(false, pair.driven())) {
      return timedOut(
          fmt::format("notification {}: not handled within {} s", i, kEventDeadline.count()));
    }
    sync::MutexLock lock(events->mutex);
    if (i >= o.warmup) out.push_back(usBetween(sent, *events->notified));
  }
  return out;
}

// The bare loop's post -> AM handler p50 (us) for one S-byte put + flush + AM at a time, or
// with `skipData`, flush + AM alone; its target spins `spinUs` after each event, as the
// agents' progress threads did. Runs after the agents are gone.
Result<BareUcpResult> bareFixedOverhead(const std::string& transport, std::uint64_t bytes,
                                        bool skipData, double spinUs,
                                        const FixedOverheadOptions& o) {
  BareUcpOptions b;
  b.transport = transport;
  b.alloc = BufferAlloc::kUcx;
  b.op = BareOp::kPut;
  b.fixedOverhead = true;
  b.segmentBytes = std::max<std::uint64_t>(8, bytes);
  b.segments = 1;
  b.window = 1;
  b.requests = o.repeats;
  b.warmupRequests = o.warmup;
  b.bufferBytes = std::max<std::uint64_t>(b.segmentBytes, 1u << 20);
  b.targetSpinUs = spinUs;
  b.skipData = skipData;
  b.verify = !skipData;
  b.timeoutSeconds = 120;
  KVX_ASSIGN_OR_RETURN(BareUcpResult r, runBareUcp(b, o.bareBinary));
  if (!r.receiverLatency) {
    return internalError("the bare loop reported no receiver latency in fixed-overhead mode");
  }
  return r;
}

struct Row {
  std::string name;
  std::uint64_t bytes = 0;  // 0: notification only
  double spinUs = kKvxProgressSpinUs;
  std::vector<double> kvxUs, kvxDoneUs;
  std::optional<Status> failed;
};

ControlFigure rowFigure(const Row& row, const std::string& transport,
                        const FixedOverheadOptions& o) {
  if (row.failed)
    return failedFigure(kFixedOverheadGroup, row.name, transport, row.failed->toString());
  const SampleStats kvx = summarize(row.kvxUs);
  std::string detail = fmt::format("max {:.1f} us", kvx.max);
  if (!row.kvxDoneUs.empty()) {
    detail += fmt::format("; initiator done p50 {:.1f} us", summarize(row.kvxDoneUs).p50);
  }
  ControlFigure f = measuredFigure(kFixedOverheadGroup, row.name, transport, kvx.p50, "us p50",
                                   static_cast<std::uint32_t>(kvx.count), detail);
  f.target = "<= bare + 5 us";
  if (o.bareBinary.empty()) {
    f.detail += "; no bare reference (--no-bare)";
    return f;
  }
  auto bare =
      bareFixedOverhead(bareTransportFor(transport), row.bytes, row.bytes == 0, row.spinUs, o);
  if (!bare.isOk()) {
    f.detail += "; bare loop failed: " + bare.status().toString();
    return f;
  }
  const double bareUs = bare->receiverLatency->p50;
  f.detail +=
      fmt::format("; bare {} p50 {:.1f} us (kvx {:+.1f} us)",
                  row.bytes == 0 ? "flush + AM" : "put + flush + AM", bareUs, kvx.p50 - bareUs);
  if (!bare->verify.ok && bare->verify.checked) f.detail += "; bare verify FAILED";
  f.met = kvx.p50 <= bareUs + kAllowanceUs;
  return f;
}

Row oneBlockRow(OverheadPair& pair, std::uint64_t bytes, std::string name,
                const FixedOverheadOptions& o) {
  Row row;
  row.name = std::move(name);
  row.bytes = bytes;
  auto latencies = oneBlockLatencies(pair, bytes, o);
  if (latencies.isOk()) {
    row.kvxUs = std::move(latencies->notifiedUs);
    row.kvxDoneUs = std::move(latencies->doneUs);
  } else {
    row.failed = latencies.status();
  }
  return row;
}

std::string awakeRowName(bool callerDriven) {
  return fmt::format("1 block of {} + notification, {}", bytesLabel(kAwakeRowBytes),
                     callerDriven ? "the posting thread drives the initiator's progress"
                                  : "progress threads never sleep");
}

}  // namespace

std::vector<ControlFigure> measureFixedOverhead(const std::string& transport,
                                                const FixedOverheadOptions& o) {
  std::vector<Row> rows;
  {
    auto pair = connectOverheadPair(
        transport, std::chrono::microseconds(static_cast<std::int64_t>(kKvxProgressSpinUs)));
    if (!pair.isOk()) {
      return {failedFigure(kFixedOverheadGroup, "1 block + notification", transport,
                           pair.status().toString())};
    }
    for (std::uint64_t bytes : o.segmentBytes) {
      rows.push_back(oneBlockRow(
          *pair, bytes,
          fmt::format("1 block of {} + notification, post -> notified", bytesLabel(bytes)), o));
    }
    Row note;
    note.name = "notification only, send -> notified";
    auto latencies = notificationLatencies(*pair, o);
    if (latencies.isOk()) {
      note.kvxUs = std::move(latencies).value();
    } else {
      note.failed = latencies.status();
    }
    rows.push_back(std::move(note));
  }  // the agents are gone before the bare loop runs: it has the CPUs to itself
  // The same 4 KiB row with progress that never sleeps (and a bare target that never sleeps
  // either): the default row minus this one is what waking costs. Then with the initiator
  // in caller mode, posting and progressing on one thread as the bare loop does: what is
  // left is the hand-over between the posting thread and a progress thread.
  for (bool callerDriven : {false, true}) {
    auto pair = connectOverheadPair(transport, kAwakeSpin, callerDriven);
    Row row;
    if (pair.isOk()) {
      row = oneBlockRow(*pair, kAwakeRowBytes, awakeRowName(callerDriven), o);
    } else {
      row.name = awakeRowName(callerDriven);
      row.failed = pair.status();
    }
    row.spinUs = std::chrono::duration<double, std::micro>(kAwakeSpin).count();
    rows.push_back(std::move(row));
  }
  std::vector<ControlFigure> out;
  for (const Row& row : rows) out.push_back(rowFigure(row, transport, o));
  return out;
}

}  // namespace kvx::bench
