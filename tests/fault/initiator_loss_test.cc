// kvx-test-labels: fault multiprocess
// The initiator of a push dies, hangs or stalls with blocks reserved for it on the decode
// agent: the decode agent gets them back. A killed prefill agent's socket closes, so within
// milliseconds; a stopped one is noticed by the heartbeats, within peerTimeout + 1 s; a live
// one that never finishes its request loses the reservation when the lease runs out.
//
// Hidden cases ("[ucx-orphan-abort]", root not needed) reproduce a UCX 1.13.1 abort over tcp:
// a target agent that was held up (SIGSTOP) while its socket held operations of an initiator
// that then died aborts inside UCX when it resumes and acts on them (docs/reliability.md,
// "Target resumes holding a dead initiator's operations").
#include <cstdio>

#include "tests/fault/fault_fixture.h"
#include "tests/support/cpu_load.h"

using namespace kvx;
using namespace kvx::test::fault;
using kvx::test::CpuLoad;

namespace {

std::unique_ptr<KvAgent> makeDecode(const std::string& transport, std::chrono::milliseconds lease) {
  KvAgentOptions options;
  options.agent.name = "decode";
  REQUIRE(selectDataPath(options.agent, transport));
  options.role = KvRole::kDecode;
  options.pool.model = kModel;
  options.pool.blocks = 48;
  options.leaseTimeout = lease;
  auto decode = KvAgent::create(options);
  REQUIRE(decode.isOk());
  return std::move(decode).value();
}

// Until at least `blocks` of the decode pool are reserved.
bool waitReserved(KvAgent& decode, Deadline deadline, std::uint64_t blocks = 1) {
  while (Clock::now() < deadline) {
    const KvPoolUsage usage = decode.usage();
    if (usage.freeBlocks + blocks <= usage.totalBlocks) return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

// A `kvx agent --role prefill --name prefill` process with `options` after those; its stderr
// goes to `log`.
std::unique_ptr<ChildProcess> spawnPrefill(std::vector<std::string> options,
                                           const std::string& log) {
  std::vector<std::string> args = {"-c",
                                   "exec \"$0\" \"$@\" 2>" + log,
                                   kvx::test::kvxBinary(),
                                   "agent",
                                   "--role",
                                   "prefill",
                                   "--name",
                                   "prefill",
                                   "--log-level",
                                   "debug"};
  args.insert(args.end(), options.begin(), options.end());
  auto child = ChildProcess::spawn("/bin/sh", args);
  REQUIRE(child.isOk());
  return std::make_unique<ChildProcess>(std::move(child).value());
}

// A prefill agent pushing three slow layer-wise requests (one layer a second) to `address`.
std::unique_ptr<ChildProcess> startPrefill(const std::string& transport, const std::string& address,
                                           const std::string& log) {
  return spawnPrefill(
      {"--blocks", "64",           "--model",     kModel,         "--transport", transport,
       "--peer",   address,        "--synthetic", "--requests",   "3",           "--rate",
       "0",        "--min-tokens", "64",          "--max-tokens", "64",          "--layerwise",
       "on",       "--layer-ms",   "1000"},
      log);
}

// The hidden cases' model: llama3-8b's 2 MiB blocks (with the fault tests' 64 KiB blocks the
// push case aborted in 1 run of 3, the pull case in none of 3).
constexpr const char* kOrphanModel = "llama3-8b";

// A prefill agent that keeps `address` busy with requests as fast as it can, pushed or
// (`pull`) read by the decode agent, over `dataPath` (tcp: UCX; socket: kvx's own).
// `extra`: more options (--no-fill: the prefill agent spends its time moving, not writing
// content).
std::unique_ptr<ChildProcess> startBusyPrefill(const std::string& dataPath,
                                               const std::string& address, bool pull,
                                               const std::string& log,
                                               const std::vector<std::string>& extra = {}) {
  std::vector<std::string> options = {
      "--blocks",    "128",          "--model",     kOrphanModel,
      "--transport", dataPath,       "--mode",      pull ? "pull" : "push",
      "--peer",      address,        "--synthetic", "--requests",
      "100000",      "--rate",       "0",           "--min-tokens",
      "512",         "--max-tokens", "1024"};
  options.insert(options.end(), extra.begin(), extra.end());
  return spawnPrefill(options, log);
}

// Kills (and resumes, if stopped) a child process still running when it goes out of scope.
struct Reap {
  ChildProcess& child;
  ~Reap() {
    child.signal(SIGKILL);
    child.signal(SIGCONT);
    (void)child.waitExit(10s);
  }
};

// Stops `target` while `initiator` keeps it busy, kills the initiator, resumes the target:
// the target must go on and stop cleanly (STATS, exit 0).
void stopKillResume(ChildProcess& target, ChildProcess& initiator) {
  std::this_thread::sleep_for(2s);  // connected and moving
  REQUIRE(::kill(target.pid(), SIGSTOP) == 0);
  std::this_thread::sleep_for(500ms);  // the initiator's operations pile up in the target's socket
  REQUIRE(::kill(initiator.pid(), SIGKILL) == 0);
  (void)initiator.waitExit(10s);
  std::this_thread::sleep_for(500ms);
  REQUIRE(::kill(target.pid(), SIGCONT) == 0);
  std::this_thread::sleep_for(1s);
}

}  // namespace

TEST_CASE("a killed or stopped prefill agent's reservations return to the decode pool", "[fault]") {
  const std::string transport = GENERATE("shm", "tcp");
  const std::string how = GENERATE("kill", "stop");
  INFO("transport " << transport << ", " << how);
  const ScratchDir scratch;
  auto decode = makeDecode(transport, 60s);  // far beyond the bound: the lease is not why
  const std::string log = scratch.path() + "/prefill-" + transport + "-" + how + ".log";
  auto prefill = startPrefill(transport, decode->listenAddress(), log);
  const Reap reap{*prefill};

  INFO("prefill log: " << log);
  // Every request placed before the stop (3 of 4 blocks each): one placed only after the
  // agent resumed would hold its blocks for its 8 one-second layers, past the wait below
  // (seen once in a loaded run: 2 of 3 placed at the stop).
  REQUIRE(waitReserved(*decode, deadlineIn(30s), 3 * 4));
  const auto start = Clock::now();
  ::kill(prefill->pid(), how == "kill" ? SIGKILL : SIGSTOP);
  // Over shared memory a stopped prefill agent copies into this pool itself when it resumes:
  // its blocks stay held while it is stopped, and come back once it answers the abort.
  const bool held = transport == "shm" && how == "stop";
  const bool freed = held ? waitPeerGone(*decode, "prefill", deadlineIn(failureBound()))
                          : waitPoolFree(*decode, deadlineIn(failureBound()));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  std::printf("initiator %s over %s: %s after %lld ms\n", how.c_str(), transport.c_str(),
              held ? "peer gone, blocks held," : "reservations back",
              static_cast<long long>(took.count()));
  CHECK(freed);
  for (const KvPeerStatus& peer : decode->peers()) CHECK(peer.name != "prefill");
  // Heartbeats, not TCP: the stopped agent's last heartbeat can be up to a heartbeat interval
  // older than the stop (1852 ms was seen for a 2 s timeout), plus the timer's lateness.
  if (how == "stop") {
    CHECK(took >= AgentOptions{}.peerTimeout - AgentOptions{}.heartbeatInterval - 50ms);
  }
  if (held) {
    std::this_thread::sleep_for(500ms);  // no timer frees them
    const KvPoolUsage usage = decode->usage();
    CHECK(usage.heldBlocks > 0);
    CHECK(usage.freeBlocks + usage.heldBlocks == usage.totalBlocks);
    REQUIRE(::kill(prefill->pid(), SIGCONT) == 0);
    const auto resumed = Clock::now();
    CHECK(waitPoolFree(*decode, deadlineIn(10s)));
    CHECK(decode->usage().heldBlocks == 0);
    std::printf(
        "initiator stop over shm: held blocks back %lld ms after it resumed\n",
        static_cast<long long>(
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - resumed).count()));
  }
}

TEST_CASE("a prefill agent stopped mid-push over shared memory writes nothing into freed blocks",
          "[fault]") {
  // It resumes on a busy CPU long after the decode agent gave its requests up, with no hold
  // (--lost-push-hold-ms 0), and finishes the copies it was making: they must land in blocks
  // still held for it. The decode agent learns that it stopped writing from its answer to an
  // abort once it is back, and its blocks come back then (or when its process ends).
  const ScratchDir scratch;
  DecodeProcess decode = startDecode("decode", "shm", 96, scratch.path() + "/decode.log",
                                     kOrphanModel, {"--lost-push-hold-ms", "0"}, false);
  const std::string log = scratch.path() + "/prefill.log";
  auto prefill = startBusyPrefill("shm", decode.address, false, log, {"--no-fill"});
  const Reap reap{*prefill};
  INFO("prefill log: " << log << "; decode log: " << decode.log);
  // Three stops: a stop lands in the middle of a copy in most, not all, runs (without the
  // wait for proof, 2 runs of 3 with one stop found 37 and 52 late writes, one found none).
  std::size_t held = 0;
  for (std::size_t stop = 1; stop <= 3; ++stop) {
    INFO("stop " << stop);
    // Joined (again: a resumed agent redials the decode agent that dropped it) and pushing.
    REQUIRE(waitForLogCount(decode, "prefill agent 'prefill' joined", stop, 20s));
    std::this_thread::sleep_for(1500ms);
    REQUIRE(::kill(prefill->pid(), SIGSTOP) == 0);
    REQUIRE(waitForLogCount(decode, "peer 'prefill' left", stop, failureBound() + 2s));
    std::this_thread::sleep_for(200ms);
    const std::size_t holding = countInLog(decode, "until prefill agent 'prefill'");
    const CpuLoad busy;  // the resumed agent's copies compete for the CPU
    REQUIRE(::kill(prefill->pid(), SIGCONT) == 0);
    // Back, it is asked to abort what it may still write into (if anything was held).
    if (holding > held) {
      CHECK(waitForLogCount(decode, "prefill agent 'prefill' is back: asking it to abort", holding,
                            20s));
    }
    held = holding;
    std::this_thread::sleep_for(1s);
  }
  CHECK(held > 0);  // at least one stop caught a request in flight
  // Still pushing: the decode agent keeps taking its requests.
  std::this_thread::sleep_for(2s);
  ::kill(prefill->pid(), SIGKILL);
  (void)prefill->waitExit(10s);
  const nlohmann::json stats = decode.stop();  // its shutdown checks every free block again
  INFO("decode agent: " << stats.dump());
  CHECK(stats["lateWrites"] == 0);
  CHECK(stats["corruptBlocks"] == 0);
  CHECK(stats["freeBlocks"] == stats["totalBlocks"]);
  CHECK(stats["arrivals"] > 0);
}

TEST_CASE("a reservation the initiator never fills is reclaimed when its lease runs out",
          "[fault]") {
  auto decode = makeDecode("tcp", 1s);
  auto created = KvAgent::create(prefillOptions("prefill", "tcp", 64));
  REQUIRE(created.isOk());
  KvAgent& prefill = **created;
  REQUIRE(prefill.connect(decode->listenAddress(), deadlineIn(10s)).isOk());
  // Layer-wise, and no layer is ever declared ready: the prefill agent stays connected and
  // healthy, but the request never completes.
  REQUIRE(
      prefill.submit(makeRequest(prefill, "stuck", 4 * kTokensPerBlock, "decode", true)).isOk());
  REQUIRE(waitReserved(*decode, deadlineIn(10s)));
  const auto start = Clock::now();
  CHECK(waitPoolFree(*decode, deadlineIn(3s)));
  CHECK(Clock::now() - start >= 500ms);
  auto outcome = prefill.wait("stuck", deadlineIn(5s));
  REQUIRE_FALSE(outcome.isOk());
  INFO(outcome.status().toString());
  CHECK(outcome.status().code() == StatusCode::kTimedOut);
  CHECK_THAT(outcome.status().message(), Catch::Contains("lease"));
  // The decode agent still serves this prefill agent.
  REQUIRE(
      prefill.submit(makeRequest(prefill, "next", 2 * kTokensPerBlock, "decode", false)).isOk());
  CHECK(prefill.wait("next", deadlineIn(10s)).isOk());
  CHECK(decode->nextArrival(deadlineIn(5s)).isOk());
}

namespace {

// A decode agent stopped while a prefill agent pushes into it over `dataPath`; the prefill
// agent is killed meanwhile; the decode agent resumes and must go on, and stop cleanly with
// no corrupt block, no late write and every block free.
void stoppedTargetOfDeadPusher(const std::string& dataPath) {
  const ScratchDir scratch;
  DecodeProcess decode =
      startDecode("decode", dataPath, 128, scratch.path() + "/decode.log", kOrphanModel);
  auto prefill = startBusyPrefill(dataPath, decode.address, false, scratch.path() + "/prefill.log");
  stopKillResume(*decode.process, *prefill);
  const nlohmann::json stats = decode.stop();
  CHECK(stats["corruptBlocks"] == 0);
  CHECK(stats["lateWrites"] == 0);
  CHECK(stats["freeBlocks"] == stats["totalBlocks"]);
}

// A prefill agent stopped while a decode agent reads from it over `dataPath`; the decode agent
// is killed meanwhile; the prefill agent resumes and must stop with its own verdict (exit 1:
// requests to the killed peer failed), not a signal.
void stoppedTargetOfDeadReader(const std::string& dataPath) {
  const ScratchDir scratch;
  DecodeProcess decode =
      startDecode("decode", dataPath, 128, scratch.path() + "/decode.log", kOrphanModel);
  const std::string log = scratch.path() + "/prefill.log";
  auto prefill = startBusyPrefill(dataPath, decode.address, true, log);
  INFO("prefill log: " << log);
  stopKillResume(*prefill, *decode.process);
  ::kill(prefill->pid(), SIGTERM);
  (void)readStats(*prefill);
  CHECK(prefill->waitExit(30s) <= 1);  // 134 (SIGABRT) is the abort
}

}  // namespace

// Not run by default: fails, the decode agent aborting in UCX's ucp_put_handler ("Fatal:
// unexpected error: Endpoint timeout"): 2 runs of 3.
TEST_CASE("UCX 1.13.1 abort: a stopped decode agent resumes holding a dead prefill's puts",
          "[.][ucx-orphan-abort]") {
  stoppedTargetOfDeadPusher("tcp");
}

// Not run by default: fails, the prefill agent aborting in UCX (an assertion in
// uct_tcp_ep_pending_purge, or "Fatal: unexpected error" in ucp_get_req_handler): 3 runs of 3.
TEST_CASE("UCX 1.13.1 abort: a stopped prefill agent resumes holding a dead decode's reads",
          "[.][ucx-orphan-abort]") {
  stoppedTargetOfDeadReader("tcp");
}

// The same two faults over kvx's socket transport, whose target ends a connection whose
// initiator is gone instead of aborting.
TEST_CASE("socket transport: a stopped decode agent resumes holding a dead prefill's puts",
          "[fault]") {
  stoppedTargetOfDeadPusher("socket");
}

TEST_CASE("socket transport: a stopped prefill agent resumes holding a dead decode's reads",
          "[fault]") {
  stoppedTargetOfDeadReader("socket");
}
