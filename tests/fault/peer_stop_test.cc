// kvx-test-labels: fault multiprocess
// A hung decode agent (SIGSTOP) during transfers: its socket stays open and UCX reports
// nothing, so only the control channel's heartbeats can tell. The in-process prefill agent's
// requests to it fail with PEER_FAILED within peerTimeout + 1 s, and only those: requests in
// flight to a second decode agent complete and verify. After SIGCONT the stopped agent finds
// the prefill agent gone and returns the blocks it had reserved for it. The stopped agent
// returns them with no hold (--lost-push-hold-ms 0), and resumes on a CPU kept busy by the
// test: the prefill agent's pushes are still queued in its sockets when it resumes (the
// test checks that they are, where the kernel can tell), and no byte of them may land in a
// freed block (--check-free-blocks counts those as late writes). What keeps them out is the order:
// the engine closes a lost peer's data path before it lists the peer as gone, and the KV side frees
// only once it sees the peer gone.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <regex>
#include <thread>
#include <vector>

#include "tests/fault/fault_fixture.h"
#include "tests/support/cpu_load.h"
#include "tests/support/unread_socket_bytes.h"

using namespace kvx;
using namespace kvx::test::fault;
using kvx::test::CpuLoad;
using kvx::test::unreadSocketBytes;

namespace {

std::uint16_t portOf(const std::string& address) {
  return static_cast<std::uint16_t>(std::stoul(address.substr(address.rfind(':') + 1)));
}

// Submits a layer-wise request to `destination` with layer 0 handed over, and waits until it
// is transferring.
std::string startLayerwise(KvAgent& prefill, const std::string& id,
                           const std::string& destination) {
  REQUIRE(prefill.submit(makeRequest(prefill, id, 4 * kTokensPerBlock, destination, true)).isOk());
  REQUIRE(prefill.layerReady(id, 0).isOk());
  const KvRequestStatus s = waitState(prefill, id, KvRequestState::kTransferring, deadlineIn(10s));
  INFO(id << " is " << toString(s.state) << ": " << s.status.toString());
  REQUIRE(s.state == KvRequestState::kTransferring);
  return id;
}

}  // namespace

TEST_CASE("a stopped decode agent fails the requests to it within the bound, and only those",
          "[fault]") {
  const std::string transport = GENERATE("shm", "tcp", "socket");
  INFO("transport " << transport);
  const ScratchDir scratch;
  const std::string& dir = scratch.path();
  DecodeProcess stopped = startDecode("decode-stopped", transport, 48, dir + "/stopped.log", kModel,
                                      {"--lost-push-hold-ms", "0"});
  DecodeProcess live = startDecode("decode-live", transport, 48, dir + "/live.log");
  // Whatever happens below, never leave a stopped process behind.
  struct Resume {
    pid_t pid;
    ~Resume() { ::kill(pid, SIGCONT); }
  } resume{stopped.pid()};
  auto prefill = KvAgent::create(prefillOptions("prefill", transport, 64));
  REQUIRE(prefill.isOk());
  KvAgent& p = **prefill;
  REQUIRE(p.connect(stopped.address, deadlineIn(10s)).isOk());
  REQUIRE(p.connect(live.address, deadlineIn(10s)).isOk());

  // A whole request each way first: both agents work.
  for (const char* destination : {"decode-stopped", "decode-live"}) {
    const std::string id = std::string("warm-") + destination;
    REQUIRE(p.submit(makeRequest(p, id, 2 * kTokensPerBlock, destination, false)).isOk());
    auto done = p.wait(id, deadlineIn(20s));
    INFO(id << ": " << (done.isOk() ? "released" : done.status().toString()));
    REQUIRE(done.isOk());
  }
  const std::vector<std::string> doomed = {startLayerwise(p, "stop-0", "decode-stopped"),
                                           startLayerwise(p, "stop-1", "decode-stopped"),
                                           startLayerwise(p, "stop-2", "decode-stopped")};
  const std::vector<std::string> spared = {startLayerwise(p, "live-0", "decode-live"),
                                           startLayerwise(p, "live-1", "decode-live")};

  REQUIRE(::kill(stopped.pid(), SIGSTOP) == 0);
  const auto stoppedAt = Clock::now();
  // More layers go out to the stopped agent: its moves are stuck in flight (on shared
  // memory and tcp alike, the target must progress) until the agent is declared failed.
  for (const std::string& id : doomed) {
    for (std::uint32_t layer = 1; layer + 1 < kLayers; ++layer) {
      REQUIRE(p.layerReady(id, layer).isOk());
    }
  }
  std::string failure;  // what the first request saw
  for (const std::string& id : doomed) {
    auto end = p.wait(id, stoppedAt + failureBound());
    auto state = p.status(id);
    REQUIRE(state.isOk());
    INFO(id << " ended " << toString(state->state) << ": " << end.status().toString());
    REQUIRE(state->state == KvRequestState::kFailed);
    CHECK(end.status().code() == StatusCode::kPeerFailed);
    if (failure.empty()) failure = end.status().toString();
  }
  const auto detection =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - stoppedAt);
  std::printf(
      "SIGSTOP fault (%s): the stopped agent's requests failed %lld ms after the stop "
      "(peer timeout %lld ms, bound %lld ms): %s\n",
      transport.c_str(), static_cast<long long>(detection.count()),
      static_cast<long long>(AgentOptions{}.peerTimeout.count()),
      static_cast<long long>(failureBound().count()), failure.c_str());
  std::fflush(stdout);
  // The heartbeat timeout, not anything sooner: the stopped agent's socket is still open.
  CHECK(detection >= AgentOptions{}.peerTimeout - AgentOptions{}.heartbeatInterval);
  CHECK(detection <= failureBound());
  REQUIRE(waitPeerGone(p, "decode-stopped", deadlineIn(5s)));

  // The other agent's requests were untouched: they finish and verify.
  for (const std::string& id : spared) {
    auto s = p.status(id);
    REQUIRE(s.isOk());
    CHECK(s->state == KvRequestState::kTransferring);
    for (std::uint32_t layer = 1; layer < kLayers; ++layer) REQUIRE(p.layerReady(id, layer).isOk());
  }
  for (const std::string& id : spared) {
    auto done = p.wait(id, deadlineIn(20s));
    INFO(id << ": " << (done.isOk() ? "released" : done.status().toString()));
    CHECK(done.isOk());
  }
  REQUIRE(p.submit(makeRequest(p, "live-after", 3 * kTokensPerBlock, "decode-live", false)).isOk());
  CHECK(p.wait("live-after", deadlineIn(20s)).isOk());
  // Every source block, those of the failed requests included, is back in the prefill pool.
  CHECK(waitPoolFree(p, deadlineIn(5s)));

  // Resumed, the stopped agent finds its link closed: it fails the requests of the lost
  // prefill agent itself (not at shutdown, which would cancel them) and frees their blocks.
  // The prefill agent's last pushes are certain to arrive after the stop: over UCX's tcp they
  // sit unread in the stopped agent's data sockets; the socket transport's connection was
  // reset by the prefill agent (the kernel no longer lists it), and the stopped agent logs
  // the put it stops placing, or the bytes it drops with the removed peer's connection. Over shared
  // memory no socket holds them, and where UCX's shared-memory queues do cannot be seen from here.
  const std::uint64_t unread = unreadSocketBytes(stopped.pid(), portOf(stopped.address));
  std::printf("SIGSTOP fault (%s): %llu bytes unread in the stopped agent's data sockets\n",
              transport.c_str(), static_cast<unsigned long long>(unread));
  std::fflush(stdout);
  if (transport == "tcp") CHECK(unread > 0);
  {
    const CpuLoad busy;  // the resumed agent's threads compete for the CPU
    REQUIRE(::kill(stopped.pid(), SIGCONT) == 0);
    for (const std::string& id : doomed) {
      const std::string failing = "request '" + id + "' failing: ";
      REQUIRE(waitForLog(stopped, failing, 10s));
      const std::string log = stopped.logText();
      const std::size_t at = log.find(failing) + failing.size();
      CHECK(log.substr(at, log.find('\n', at) - at).rfind("PEER_FAILED", 0) == 0);
    }
  }
  if (transport == "socket" && unread > 0) {
    // Bytes of a put sat unread in its sockets when it resumed: whichever it saw first, the
    // reset or the removal of the peer, it dropped them. (With none unread, a whole put had
    // been read and placed before the stop, into blocks it still held: nothing to drop.)
    const std::regex dropped(
        "the peer reset it in the middle of a put; the rest of it is dropped|"
        "from the removed peer at [0-9.:]+: [1-9][0-9]* bytes it sent were still unread");
    const Deadline until = deadlineIn(5s);
    while (!std::regex_search(stopped.logText(), dropped) && Clock::now() < until) {
      std::this_thread::sleep_for(20ms);
    }
    CHECK(std::regex_search(stopped.logText(), dropped));
  }
  const nlohmann::json stoppedStats = stopped.stop();
  const nlohmann::json liveStats = live.stop();
  INFO("stopped agent: " << stoppedStats.dump() << "\nlive agent: " << liveStats.dump());
  CHECK(stoppedStats["freeBlocks"] == stoppedStats["totalBlocks"]);
  CHECK(stoppedStats["corruptBlocks"] == 0);
  CHECK(stoppedStats["lateWrites"] == 0);
  CHECK(stoppedStats["arrivals"] == 1);
  CHECK(liveStats["freeBlocks"] == liveStats["totalBlocks"]);
  CHECK(liveStats["corruptBlocks"] == 0);
  CHECK(liveStats["lateWrites"] == 0);
  CHECK(liveStats["arrivals"] == 4);
  CHECK(liveStats["blocksVerified"] == liveStats["blocks"]);
  CHECK(liveStats["blocks"] == 2 + 4 + 4 + 3);
}
