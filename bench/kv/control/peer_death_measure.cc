#include "bench/kv/control/peer_death_measure.h"

#include <fmt/format.h>
#include <signal.h>

#include <map>
#include <thread>

#include "bench/kv/control/control_agents.h"
#include "bench/kv/control/control_clock.h"
#include "kvx/kv_agent.h"
#include "process/agent_protocol.h"
#include "process/child_process.h"

namespace kvx::bench {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kPeerDeathGroup = "peer death";
constexpr auto kPoll = std::chrono::microseconds(200);

Status submitOne(KvAgent& prefill, const std::string& id, std::uint64_t tokens) {
  KVX_ASSIGN_OR_RETURN(std::vector<std::uint64_t> blocks,
                       prefill.allocateBlocks(prefill.pool().blocksFor(tokens)));
  KvRequestSpec spec;
  spec.id = id;
  spec.tokens = tokens;
  spec.sourceBlocks = std::move(blocks);
  return prefill.submit(spec);
}

struct Ending {
  double ms = 0;
  KvRequestState state = KvRequestState::kQueued;
  StatusCode code = StatusCode::kOk;
};

std::string describeCodes(const std::vector<Ending>& endings) {
  std::map<std::string, int> counts;
  for (const Ending& e : endings) {
    counts[e.state == KvRequestState::kFailed ? std::string(toString(e.code))
                                              : std::string(toString(e.state))]++;
  }
  std::string out;
  for (const auto& [what, n] : counts)
    out += fmt::format("{}{} x{}", out.empty() ? "" : ", ", what, n);
  return out;
}

// What one kill showed.
struct Kill {
  std::string atKill;           // the states of the live requests at the kill, and more
  std::vector<Ending> endings;  // of the requests placed at the peer when it was killed
  std::uint64_t queued = 0;     // live but not placed: cancelled afterwards
};

// Starts a decode agent process, feeds it from an in-process prefill agent, kills it and
// watches the requests that were placed there end.
Result<Kill> killOnce(const std::string& transport, const PeerDeathOptions& o) {
  const std::uint64_t perRequest = (o.tokens + 15) / 16;
  const std::uint64_t decodeBlocks = 2 * perRequest * o.window + 16;
  auto child = kvx::process::ChildProcess::spawn(
      o.kvxBinary, {"agent", "--role", "decode", "--name", uniqueAgentName("control-victim"),
                    "--model", "llama3-8b", "--layout", "nhd", "--transport", transport, "--blocks",
                    std::to_string(decodeBlocks), "--listen", "127.0.0.1:0", "--log-level",
                    o.logLevel, "--no-populate"});
  if (!child.isOk()) return child.status().withContext("starting the decode agent");
  KVX_ASSIGN_OR_RETURN(std::string address,
                       process::readListeningAddress(*child, deadlineIn(seconds(60))));
  KVX_ASSIGN_OR_RETURN(auto created, KvAgent::create(controlKvOptions(
                                         "control-death-prefill", KvRole::kPrefill, transport,
                                         "llama3-8b", perRequest * (o.window + 1) + 16, false)));
  KvAgent& prefill = *created;
  KVX_RETURN_IF_ERROR(prefill.connect(address, deadlineIn(seconds(10))).status());

  // Keep `window` requests live until the warm-up is over and one of them is moving.
  std::vector<std::string> live;
  std::uint64_t next = 0, completed = 0, refused = 0;
  Status lastRefusal;
  const auto warmEnd = Clock::now() + o.warmUp;
  const Deadline feedDeadline = warmEnd + seconds(15);
  std::map<std::string, KvRequestState> atKill;
  while (true) {
    bool moving = false;
    for (auto it = live.begin(); it != live.end();) {
      auto s = prefill.status(*it);
      if (s.isOk() && s->state == KvRequestState::kFailed) {
        return s->status.withContext("request '" + *it + "' failed before the kill");
      }
      if (s.isOk() && s->state == KvRequestState::kReleased) {
        ++completed;
        it = live.erase(it);
        continue;
      }
      if (s.isOk() && s->state == KvRequestState::kTransferring) moving = true;
      ++it;
    }
    const auto now = Clock::now();
    if ((now >= warmEnd && moving) || now >= feedDeadline) {
      for (const std::string& id : live) {
        atKill[id] = prefill.status(id).valueOr(KvRequestStatus{}).state;
      }
      break;
    }
    while (live.size() < o.window) {
      const std::string id = fmt::format("control-death-{}", next++);
      if (Status s = submitOne(prefill, id, o.tokens); !s.isOk()) {
        ++refused;  // typically no source blocks free until a request ends
        lastRefusal = s;
        break;
      }
      live.push_back(id);
    }
    std::this_thread::sleep_for(kPoll);
  }
  const auto killedAt = Clock::now();
  ::kill(child->pid(), SIGKILL);

  Kill out;
  std::vector<std::string> placed;
  std::map<std::string, int> stateCounts;
  for (const auto& [id, state] : atKill) {
    stateCounts[std::string(toString(state))]++;
    if (state == KvRequestState::kQueued) {
      ++out.queued;
    } else {
      placed.push_back(id);
    }
  }
  std::map<std::string, Ending> endings;
  const Deadline observeDeadline = killedAt + seconds(30);
  while (endings.size() < placed.size() && Clock::now() < observeDeadline) {
    for (const std::string& id : placed) {
      if (endings.contains(id)) continue;
      auto s = prefill.status(id);
      if (s.isOk() && isTerminal(s->state)) {
        endings[id] = Ending{msSince(killedAt), s->state, s->status.code()};
      }
    }
    std::this_thread::sleep_for(kPoll);
  }
  for (const auto& [id, state] : atKill) {
    if (state == KvRequestState::kQueued) (void)prefill.cancel(id);
  }
  (void)child->waitExit(seconds(5));

  out.atKill = "at the kill:";
  for (const auto& [state, n] : stateCounts) out.atKill += fmt::format(" {} {}", n, state);
  out.atKill += fmt::format(" ({} completed before)", completed);
  if (refused > 0) {
    out.atKill += fmt::format("; {} submits refused while feeding (last: {})", refused,
                              lastRefusal.toString());
  }
  if (endings.size() < placed.size()) {
    return timedOut(
        fmt::format("{} of {} requests placed at the killed agent had not ended 30 s "
                    "after the kill ({})",
                    placed.size() - endings.size(), placed.size(), out.atKill));
  }
  for (const auto& [id, e] : endings) out.endings.push_back(e);
  return out;
}

}  // namespace

std::vector<ControlFigure> measurePeerDeath(const std::string& transport,
                                            const PeerDeathOptions& o) {
  const std::string name = "SIGKILL decode process -> requests FAILED";
  // The requests placed at the peer may all complete before the kill lands (on shm they
  // take milliseconds): try again, up to three times, until at least one fails.
  std::string missed;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    auto kill = killOnce(transport, o);
    if (!kill.isOk())
      return {failedFigure(kPeerDeathGroup, name, transport, kill.status().toString())};
    double first = -1, last = 0;
    for (const Ending& e : kill->endings) {
      last = std::max(last, e.ms);
      if (e.state == KvRequestState::kFailed && (first < 0 || e.ms < first)) first = e.ms;
    }
    if (first < 0) {
      missed = kill->endings.empty() ? "no request was placed at the peer (" + kill->atKill + ")"
                                     : "every placed request completed (" + kill->atKill + ")";
      continue;
    }
    const auto n = static_cast<std::uint32_t>(kill->endings.size());
    std::vector<ControlFigure> out{
        measuredFigure(kPeerDeathGroup, "SIGKILL decode process -> first request FAILED", transport,
                       first, "ms", n, fmt::format("{} (try {})", kill->atKill, attempt)),
        measuredFigure(kPeerDeathGroup, "SIGKILL decode process -> every placed request ended",
                       transport, last, "ms", n, "ended: " + describeCodes(kill->endings))};
    if (kill->queued > 0) {
      out.back().detail +=
          fmt::format("; {} still queued for placement, cancelled after", kill->queued);
    }
    return out;
  }
  return {unmeasuredFigure(kPeerDeathGroup, name, transport, "3 tries: " + missed)};
}

}  // namespace kvx::bench
