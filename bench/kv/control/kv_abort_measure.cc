// measureKvAbort (bench/kv/control/abort_measure.h): KvAgent::cancel of a request in flight.
#include <fmt/format.h>

#include <thread>

#include "bench/kv/control/abort_measure.h"
#include "bench/kv/control/control_agents.h"
#include "bench/kv/control/control_clock.h"
#include "bench/kv/control/control_output.h"
#include "bench/kv/control/memory_room.h"
#include "kvx/kv_agent.h"

namespace kvx::bench {
namespace {

using std::chrono::seconds;

constexpr const char* kKvAbortGroup = "abort";
constexpr std::uint64_t kBlockBytes = 2u << 20;  // one llama3-8b block: all layers, K and V

// Submits a request of `blocks` fresh source blocks (their content does not matter).
Status submitRequest(KvAgent& prefill, const std::string& id, std::uint64_t blocks) {
  KVX_ASSIGN_OR_RETURN(std::vector<std::uint64_t> source, prefill.allocateBlocks(blocks));
  KvRequestSpec spec;
  spec.id = id;
  spec.tokens = blocks * prefill.pool().tokensPerBlock;
  spec.sourceBlocks = std::move(source);
  return prefill.submit(spec);
}

// Polls until the request is TRANSFERRING (or terminal), up to the deadline.
KvRequestState awaitMoving(KvAgent& prefill, const std::string& id, Deadline deadline) {
  KvRequestState state = KvRequestState::kQueued;
  while (Clock::now() < deadline) {
    auto s = prefill.status(id);
    if (s.isOk()) state = s->state;
    if (state == KvRequestState::kTransferring || isTerminal(state)) break;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return state;
}

// One try: a fresh request, cancelled `delayMs` after it is seen TRANSFERRING.
struct CancelTry {
  bool tookEffect = false;  // false: the request ended (or was refused) before the cancel
  std::string why;          // why it did not take effect
  double returnedMs = 0;    // cancel() call
  double endedMs = 0;       // cancel() until the request is terminal
  StatusCode code = StatusCode::kOk;
};

Result<CancelTry> cancelOnce(KvAgent& prefill, KvAgent& decode, const std::string& id,
                             std::uint64_t blocks, double delayMs) {
  KVX_RETURN_IF_ERROR(submitRequest(prefill, id, blocks));
  CancelTry out;
  const KvRequestState state = awaitMoving(prefill, id, deadlineIn(seconds(10)));
  if (state == KvRequestState::kTransferring) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(delayMs));
    const auto cancelAt = Clock::now();
    const Status refused = prefill.cancel(id);
    out.returnedMs = msSince(cancelAt);
    if (refused.isOk()) {
      auto ended = prefill.wait(id, deadlineIn(seconds(10)));
      out.endedMs = msSince(cancelAt);
      out.code = ended.status().code();
      KVX_ASSIGN_OR_RETURN(KvRequestStatus last, prefill.status(id));
      if (!isTerminal(last.state)) {
        return timedOut("the cancelled request was still " + std::string(toString(last.state)) +
                        " 10 s after cancel()");
      }
      out.tookEffect = last.state == KvRequestState::kFailed;
      if (!out.tookEffect) out.why = "it completed before the cancel took effect";
    } else {
      out.why = "cancel() refused: " + refused.toString();
    }
  } else {
    out.why = "it was " + std::string(toString(state)) + " instead of TRANSFERRING";
  }
  if (!out.tookEffect) {
    // It arrived: hand its blocks back so the next try has room.
    auto arrival = decode.nextArrival(deadlineIn(seconds(5)));
    if (arrival.isOk()) {
      (void)decode.consume(arrival->id);
      (void)decode.release(arrival->id);
    }
    (void)prefill.wait(id, deadlineIn(seconds(5)));
  }
  return out;
}

// A 1-block request after the cancel: the peer still takes requests (and, as for Agent,
// the endpoint a cancel may have reset is wired up again before the agents go).
Result<double> requestAfter(KvAgent& prefill, KvAgent& decode) {
  const std::string id = "control-abort-after";
  const auto started = Clock::now();
  KVX_RETURN_IF_ERROR(submitRequest(prefill, id, 1));
  KVX_ASSIGN_OR_RETURN(KvArrival arrival, decode.nextArrival(deadlineIn(seconds(10))));
  KVX_ASSIGN_OR_RETURN(KvRequestStatus done, prefill.wait(id, deadlineIn(seconds(10))));
  const double ms = msSince(started);
  KVX_RETURN_IF_ERROR(decode.consume(arrival.id));
  KVX_RETURN_IF_ERROR(decode.release(arrival.id));
  return ms;
}

}  // namespace

std::vector<ControlFigure> measureKvAbort(const std::string& transport, std::uint64_t bytes) {
  const std::uint64_t blocks = std::max<std::uint64_t>(1, bytes / kBlockBytes);
  const std::string name =
      fmt::format("KvAgent::cancel {} request -> FAILED", bytesLabel(blocks * kBlockBytes));
  auto fail = [&](const Status& s) {
    return std::vector<ControlFigure>{failedFigure(kKvAbortGroup, name, transport, s.toString())};
  };
  if (Status room = checkMemoryRoom(2 * (blocks + 16) * kBlockBytes); !room.isOk()) {
    return {unmeasuredFigure(kKvAbortGroup, name, transport, room.message())};
  }
  auto decode = KvAgent::create(controlKvOptions("control-abort-decode", KvRole::kDecode, transport,
                                                 "llama3-8b", blocks + 16, true));
  if (!decode.isOk()) return fail(decode.status());
  auto prefill = KvAgent::create(controlKvOptions("control-abort-prefill", KvRole::kPrefill,
                                                  transport, "llama3-8b", blocks + 16, true));
  if (!prefill.isOk()) return fail(prefill.status());
  KvAgent& p = **prefill;
  if (auto c = p.connect((*decode)->listenAddress(), deadlineIn(seconds(10))); !c.isOk()) {
    return fail(c.status());
  }
  const auto warmStart = Clock::now();
  if (Status s = submitRequest(p, "control-abort-warm", blocks); !s.isOk()) return fail(s);
  auto arrival = (*decode)->nextArrival(deadlineIn(seconds(60)));
  if (!arrival.isOk()) return fail(arrival.status());
  auto warm = p.wait("control-abort-warm", deadlineIn(seconds(60)));
  if (!warm.isOk()) return fail(warm.status());
  const double fullMs = msSince(warmStart);
  if (Status s = (*decode)->consume(arrival->id); !s.isOk()) return fail(s);
  if (Status s = (*decode)->release(arrival->id); !s.isOk()) return fail(s);

  // The request may finish before the cancel reaches it (on shm a request of this size can
  // take a few ms): try again sooner, up to three times.
  std::string missed;
  int attempt = 0;
  for (double fraction : {0.25, 0.1, 0.0}) {
    ++attempt;
    auto once = cancelOnce(p, **decode, "control-abort-" + std::to_string(attempt), blocks,
                           fullMs * fraction);
    if (!once.isOk()) return fail(once.status());
    if (!once->tookEffect) {
      missed = once->why;
      continue;
    }
    auto after = requestAfter(p, **decode);
    if (!after.isOk()) {
      return fail(after.status().withContext("a 1-block request to the peer after the cancel"));
    }
    ControlFigure figure = measuredFigure(
        kKvAbortGroup, name, transport, once->endedMs, "ms", 1,
        fmt::format("ended {}; cancel() returned in {:.2f} ms, {:.1f} ms into TRANSFERRING "
                    "(try {}); whole request {:.1f} ms; a 1-block request next: {:.1f} ms",
                    toString(once->code), once->returnedMs, fullMs * fraction, attempt, fullMs,
                    *after));
    if (once->code != StatusCode::kCancelled) {
      figure.failed = true;
      figure.detail += " (expected CANCELLED)";
    }
    return {figure};
  }
  return {unmeasuredFigure(
      kKvAbortGroup, name, transport,
      fmt::format("3 tries, each request finished before the cancel reached it (whole request "
                  "{:.1f} ms; last: {})",
                  fullMs, missed))};
}

}  // namespace kvx::bench
