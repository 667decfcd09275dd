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

using namespace kvx;
using namespace kvx::test::fault;

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

bool waitReserved(KvAgent& decode, Deadline deadline) {
  while (Clock::now() < deadline) {
    const KvPoolUsage usage = decode.usage();
    if (usage.freeBlocks < usage.totalBlocks) return true;
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
std::unique_ptr<ChildProcess> startBusyPrefill(const std::string& dataPath,
                                               const std::string& address, bool pull,
                                               const std::string& log) {
  return spawnPrefill(
      {"--blocks", "128", "--model", kOrphanModel, "--transport", dataPath, "--mode",
       pull ? "pull" : "push", "--peer", address, "--synthetic", "--requests", "100000", "--rate",
       "0", "--min-tokens", "512", "--max-tokens", "1024"},
      log);
}

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
  struct Reap {
    ChildProcess& child;
    ~Reap() {
      ::kill(child.pid(), SIGKILL);
      ::kill(child.pid(), SIGCONT);
      (void)child.waitExit(10s);
    }
  } reap{*prefill};

  INFO("prefill log: " << log);
  REQUIRE(waitReserved(*decode, deadlineIn(30s)));
  const auto start = Clock::now();
  ::kill(prefill->pid(), how == "kill" ? SIGKILL : SIGSTOP);
  const bool freed = waitPoolFree(*decode, deadlineIn(failureBound()));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  std::printf("initiator %s over %s: reservations back after %lld ms\n", how.c_str(),
              transport.c_str(), static_cast<long long>(took.count()));
  CHECK(freed);
  for (const KvPeerStatus& peer : decode->peers()) CHECK(peer.name != "prefill");
  // Heartbeats, not TCP: the stopped agent's last heartbeat can be up to a heartbeat interval
  // older than the stop (1852 ms was seen for a 2 s timeout), plus the timer's lateness.
  if (how == "stop") {
    CHECK(took >= AgentOptions{}.peerTimeout - AgentOptions{}.heartbeatInterval - 50ms);
  }
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
