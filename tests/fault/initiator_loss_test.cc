// kvx-test-labels: fault multiprocess
// The initiator of a push dies, hangs or stalls with blocks reserved for it on the decode
// agent: the decode agent gets them back. A killed prefill agent's socket closes, so within
// milliseconds; a stopped one is noticed by the heartbeats, within peerTimeout + 1 s; a live
// one that never finishes its request loses the reservation when the lease runs out.
#include <cstdio>

#include "tests/fault/fault_fixture.h"

using namespace kvx;
using namespace kvx::test::fault;

namespace {

std::unique_ptr<KvAgent> makeDecode(const std::string& transport, std::chrono::milliseconds lease) {
  KvAgentOptions options;
  options.agent.name = "decode";
  options.agent.ucxTransports = transport;
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

// A `kvx agent --role prefill` process pushing three slow layer-wise requests (one layer a
// second) to `address`; its stderr goes to `log`.
std::unique_ptr<ChildProcess> startPrefill(const std::string& transport, const std::string& address,
                                           const std::string& log) {
  const std::string script = "exec \"$0\" \"$@\" 2>" + log;
  auto child = ChildProcess::spawn("/bin/sh", {"-c",
                                               script,
                                               kvx::test::kvxBinary(),
                                               "agent",
                                               "--role",
                                               "prefill",
                                               "--name",
                                               "prefill",
                                               "--blocks",
                                               "64",
                                               "--model",
                                               kModel,
                                               "--transport",
                                               transport,
                                               "--peer",
                                               address,
                                               "--synthetic",
                                               "--requests",
                                               "3",
                                               "--rate",
                                               "0",
                                               "--min-tokens",
                                               "64",
                                               "--max-tokens",
                                               "64",
                                               "--layerwise",
                                               "on",
                                               "--layer-ms",
                                               "1000",
                                               "--log-level",
                                               "debug"});
  REQUIRE(child.isOk());
  return std::make_unique<ChildProcess>(std::move(child).value());
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
  if (how == "stop") CHECK(took >= AgentOptions{}.peerTimeout - 100ms);  // heartbeats, not TCP
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
