// kvx-test-labels: fault multiprocess
// A cut link: the prefill agent (in-process, in one network namespace) and a `kvx agent
// --role decode --verify` process (in another) move requests over UCX tcp on a veth pair,
// then every packet is dropped both ways (nftables, on the decode side) while layer-wise
// requests and a 4 MiB request are mid-transfer. Neither TCP nor UCX report anything in that
// time; the control channel's heartbeats do: the pending requests fail with PEER_FAILED (or
// TIMED_OUT) within peerTimeout + 1 s of the cut and their source blocks return to the pool.
// Then the rules go, and the same prefill agent connects again and moves new requests, which
// the decode agent verifies; at the end the decode agent has every block back and none
// corrupt.
#include "tests/fault/netns/netns_fixture.h"

using namespace kvx;
using namespace kvx::test;
using namespace kvx::test::netns;

namespace {

constexpr std::uint64_t kBulkBlocks = 64;  // 4 MiB: tens of ms on this tcp path

}  // namespace

TEST_CASE("a cut between two namespaces fails pending requests in bound, then heals", "[fault]") {
  const std::string dataPath = GENERATE("tcp", "socket");
  runPrefillSide("netns cut: prefill side", {"KVX_NETNS_DATA_PATH=" + dataPath});
}

TEST_CASE("netns cut: prefill side", "[.]") {
  const NetnsNames n = pairNames();
  const fault::ScratchDir scratch;
  const std::string& dir = scratch.path();
  DecodeProcess decode = startDecode(n, 160, dir + "/decode.log");
  INFO("decode agent log " << decode.log);
  auto created = KvAgent::create(prefillOptions(n, 160));
  REQUIRE(created.isOk());
  KvAgent& p = **created;
  REQUIRE(p.connect(decode.address, deadlineIn(10s)).isOk());
  (void)moveVerified(p, decode, "warm", 3);

  const std::vector<std::string> doomed = {startLayerwise(p, "cut-0"), startLayerwise(p, "cut-1"),
                                           startLayerwise(p, "cut-2")};
  REQUIRE(p.submit(fault::makeRequest(p, "cut-bulk", kBulkBlocks * fault::kTokensPerBlock, "decode",
                                      false))
              .isOk());
  dropPackets(n, 100, dir);
  const auto cutAt = Clock::now();
  // More layers go out over the cut link; the last one never does, so none can complete.
  for (const std::string& id : doomed) {
    for (std::uint32_t layer = 1; layer + 1 < fault::kLayers; ++layer) {
      REQUIRE(p.layerReady(id, layer).isOk());
    }
  }
  std::string failure;
  for (const std::string& id : doomed) {
    auto end = p.wait(id, cutAt + fault::failureBound());
    auto state = p.status(id);
    REQUIRE(state.isOk());
    INFO(id << " ended " << toString(state->state) << ": " << end.status().toString());
    REQUIRE(state->state == KvRequestState::kFailed);
    const StatusCode code = end.status().code();
    CHECK((code == StatusCode::kPeerFailed || code == StatusCode::kTimedOut));
    if (failure.empty()) failure = end.status().toString();
  }
  const auto detection =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - cutAt);
  auto bulk = p.wait("cut-bulk", cutAt + fault::failureBound());
  auto bulkState = p.status("cut-bulk");
  REQUIRE(bulkState.isOk());
  {
    INFO("cut-bulk ended " << toString(bulkState->state) << ": " << bulk.status().toString());
    REQUIRE(isTerminal(bulkState->state));
    if (bulkState->state == KvRequestState::kFailed) {
      const StatusCode code = bulk.status().code();
      CHECK((code == StatusCode::kPeerFailed || code == StatusCode::kTimedOut));
    }
  }
  // Heartbeats, not anything sooner: the last byte before the cut can be up to a heartbeat
  // interval old, plus the liveness timer's own lateness (1496 ms was seen for 1500).
  CHECK(detection >= AgentOptions{}.peerTimeout - AgentOptions{}.heartbeatInterval - 50ms);
  CHECK(detection <= fault::failureBound());
  REQUIRE(fault::waitPeerGone(p, "decode", deadlineIn(5s)));
  REQUIRE(fault::waitPoolFree(p, deadlineIn(5s)));

  // The link returns: the same agent connects again and moves new requests.
  restoreLink(n);
  const auto healedAt = Clock::now();
  std::string lastError;
  const int attempts = reconnect(p, decode.address, deadlineIn(15s), lastError);
  INFO("reconnecting after the cut: " << lastError);
  REQUIRE(attempts > 0);
  const auto reconnected =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - healedAt);
  const std::vector<std::string> after = {"after-0", "after-1", "after-2"};
  const auto movedAt = Clock::now();
  for (const std::string& id : after) (void)moveVerified(p, decode, id, 4);
  const auto moved = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - movedAt);

  stopPrefillFirst(*created);
  const nlohmann::json stats = stopAndCheckDecode(decode);
  const bool bulkArrived = arrived(decode, "cut-bulk");
  CHECK(stats["arrivals"] == 1 + after.size() + (bulkArrived ? 1 : 0));
  for (const std::string& id : doomed) CHECK_FALSE(arrived(decode, id));
  std::printf(
      "netns cut (%s): pending requests failed %lld ms after the cut (peer timeout %lld ms, bound "
      "%lld ms): %s; the 4 MiB request %s; after the link returned the same prefill agent "
      "reconnected in %lld ms (%d attempt(s)) and moved %zu requests (verified) in %lld ms\n",
      dataPath().c_str(), static_cast<long long>(detection.count()),
      static_cast<long long>(AgentOptions{}.peerTimeout.count()),
      static_cast<long long>(fault::failureBound().count()), failure.c_str(),
      bulkState->state == KvRequestState::kReleased
          ? "had completed before the cut"
          : ("failed: " + bulk.status().toString()).c_str(),
      static_cast<long long>(reconnected.count()), attempts, after.size(),
      static_cast<long long>(moved.count()));
  std::fflush(stdout);
}
