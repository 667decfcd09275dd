#include "bench/kv/control/fixed_overhead_measure.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "bench/bare/bare_ucp_runner.h"
#include "bench/kv/bare_match.h"
#include "bench/kv/control/control_agents.h"
#include "bench/kv/control/control_clock.h"
#include "bench/kv/control/control_output.h"
#include "bench/kv/control/sample_stats.h"
#include "kvx/agent.h"

namespace kvx::bench {
namespace {

constexpr const char* kGroup = "fixed overhead";
constexpr double kAllowanceUs = 5;  // WORKLOADS.md: at most bare + 5 us
constexpr auto kEventDeadline = std::chrono::seconds(5);

// The events of one try, stamped on the threads that see them. Shared with the handler and
// the callback, which may run after the measuring frame returned on a failure.
struct Events {
  std::mutex mutex;
  std::condition_variable changed;
  std::optional<Clock::time_point> notified;  // the target's handler ran
  std::optional<Clock::time_point> done;      // the initiator's completion callback ran
  TransferStatus ended;

  void reset() {
    std::lock_guard lock(mutex);
    notified.reset();
    done.reset();
  }
  // Waits until the notification (and, if `needDone`, the completion) was seen.
  bool await(bool needDone) {
    std::unique_lock lock(mutex);
    return changed.wait_until(lock, Clock::now() + kEventDeadline,
                              [&] { return notified && (!needDone || done); });
  }
};

struct Pair {
  std::unique_ptr<Agent> initiator;
  std::unique_ptr<Agent> target;
  std::string peer;
  std::shared_ptr<Events> events = std::make_shared<Events>();
};

Result<Pair> connectPair(const std::string& transport) {
  Pair pair;
  KVX_ASSIGN_OR_RETURN(pair.initiator,
                       Agent::create(controlAgentOptions("control-fixed-initiator", transport)));
  KVX_ASSIGN_OR_RETURN(pair.target,
                       Agent::create(controlAgentOptions("control-fixed-target", transport)));
  KVX_ASSIGN_OR_RETURN(pair.peer, pair.initiator->connect(pair.target->listenAddress()));
  pair.target->setNotificationHandler([events = pair.events](Notification) {
    const auto now = Clock::now();
    std::lock_guard lock(events->mutex);
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
Result<Latencies> oneBlockLatencies(Pair& pair, std::uint64_t bytes,
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
      std::lock_guard lock(events->mutex);
      events->done = now;
      events->ended = s;
      events->changed.notify_all();
    }));
    if (!events->await(true)) {
      return timedOut(fmt::format("transfer {} of {}: no notification or completion within {} s", i,
                                  bytesLabel(bytes), kEventDeadline.count()));
    }
    std::lock_guard lock(events->mutex);
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

Result<std::vector<double>> notificationLatencies(Pair& pair, const FixedOverheadOptions& o) {
  std::vector<double> out;
  auto events = pair.events;
  for (std::uint32_t i = 0; i < o.warmup + o.repeats; ++i) {
    events->reset();
    const auto sent = Clock::now();
    KVX_RETURN_IF_ERROR(pair.initiator->sendNotification(pair.peer, "n"));
    if (!events->await(false)) {
      return timedOut(
          fmt::format("notification {}: not handled within {} s", i, kEventDeadline.count()));
    }
    std::lock_guard lock(events->mutex);
    if (i >= o.warmup) out.push_back(usBetween(sent, *events->notified));
  }
  return out;
}

// The bare loop's post -> AM handler p50 (us) for one S-byte put + flush + AM at a time, or
// with `skipData`, flush + AM alone. Runs after the agents are gone.
Result<BareUcpResult> bareFixedOverhead(const std::string& transport, std::uint64_t bytes,
                                        bool skipData, const FixedOverheadOptions& o) {
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
  b.targetSpinUs = kKvxProgressSpinUs;
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
  std::vector<double> kvxUs, kvxDoneUs;
  std::optional<Status> failed;
};

ControlFigure rowFigure(const Row& row, const std::string& transport,
                        const FixedOverheadOptions& o) {
  if (row.failed) return failedFigure(kGroup, row.name, transport, row.failed->toString());
  const SampleStats kvx = summarize(row.kvxUs);
  std::string detail = fmt::format("max {:.1f} us", kvx.max);
  if (!row.kvxDoneUs.empty()) {
    detail += fmt::format("; initiator done p50 {:.1f} us", summarize(row.kvxDoneUs).p50);
  }
  ControlFigure f = measuredFigure(kGroup, row.name, transport, kvx.p50, "us p50",
                                   static_cast<std::uint32_t>(kvx.count), detail);
  f.target = "<= bare + 5 us";
  if (o.bareBinary.empty()) {
    f.detail += "; no bare reference (--no-bare)";
    return f;
  }
  auto bare = bareFixedOverhead(transport, row.bytes, row.bytes == 0, o);
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

}  // namespace

std::vector<ControlFigure> measureFixedOverhead(const std::string& transport,
                                                const FixedOverheadOptions& o) {
  std::vector<Row> rows;
  {
    auto pair = connectPair(transport);
    if (!pair.isOk()) {
      return {failedFigure(kGroup, "1 block + notification", transport, pair.status().toString())};
    }
    for (std::uint64_t bytes : o.segmentBytes) {
      Row row;
      row.name = fmt::format("1 block of {} + notification, post -> notified", bytesLabel(bytes));
      row.bytes = bytes;
      auto latencies = oneBlockLatencies(*pair, bytes, o);
      if (latencies.isOk()) {
        row.kvxUs = std::move(latencies->notifiedUs);
        row.kvxDoneUs = std::move(latencies->doneUs);
      } else {
        row.failed = latencies.status();
      }
      rows.push_back(std::move(row));
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
  std::vector<ControlFigure> out;
  for (const Row& row : rows) out.push_back(rowFigure(row, transport, o));
  return out;
}

}  // namespace kvx::bench
