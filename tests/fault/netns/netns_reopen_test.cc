// kvx-test-labels: fault multiprocess
// A data-path link reset toward a cut peer must not hold up the agent's other peers. The
// prefill agent (in-process, in one network namespace) moves requests to two decode agents:
// "decode" across the veth pair, and "near", a second `kvx agent --role decode --verify` in
// the prefill namespace itself. Every packet to and from "decode" is then dropped while
// layer-by-layer requests to it are mid-transfer, and they are cancelled: their operations
// cannot drain, so the engine closes the link to "decode" to open a new one. Over UCX tcp,
// opening an endpoint connects its socket before UCX returns, holding the agent's only UCX
// worker, and toward a cut peer for the kernel's whole SYN retransmission time (over two
// minutes): every peer would stall. The agent opens the new link only once the peer is heard
// from again on its control link; a cut peer is declared failed first and gets none.
// Meanwhile requests to "near" must complete and verify as before. Then the link returns and
// the same prefill agent connects to "decode" again and moves a verified request.
//
// The prefill agent stops before the decode agents. In the other order UCX 1.13.1 crashed
// the prefill agent in 5 runs of 12 (a use-after-free in its tcp transport's event
// dispatch, docs/reliability.md "Peer exit after a cut-time reset"); the hidden case
// "[ucx-exit-crash]" reproduces that; "[ucx-link-return-crash]" shows the same crash when the
// link returns and stays idle a few seconds. The decode agents' free-block canary
// (--check-free-blocks) must find no late write of the cancelled requests (stopAndCheckDecode).
#include "tests/fault/netns/netns_fixture.h"

using namespace kvx;
using namespace kvx::test;
using namespace kvx::test::netns;

namespace {

constexpr std::uint64_t kBlocks = 160;
// How long a request to "near" may take while the other link is being reopened: generous
// for this 2-core machine, far below the 127 s the kernel takes to give up on a connect.
constexpr auto kNearBound = 10s;
// How long the hidden case leaves the returned link idle.
constexpr auto kIdleAfterReturn = 3s;

}  // namespace

TEST_CASE("reopening a cut peer's data path does not stall transfers to other peers", "[fault]") {
  runPrefillSide("netns reopen: prefill side");
}

// Not run by default: fails (the prefill side dies of SIGSEGV); 5 runs of 12 did.
TEST_CASE("UCX 1.13.1 crash: the cut peer exits while the prefill agent still runs",
          "[.][ucx-exit-crash]") {
  runPrefillSide("netns reopen: prefill side", {"KVX_REOPEN_DECODE_EXITS_FIRST=1"});
}

// Not run by default: the same crash once the link returns and stays idle for 3 s (the
// prefill agent reconnects on its own meanwhile); 5 runs of 18 died of SIGSEGV in that pause.
TEST_CASE("UCX 1.13.1 crash: the cut link returns and stays idle", "[.][ucx-link-return-crash]") {
  runPrefillSide("netns reopen: prefill side", {"KVX_REOPEN_IDLE_AFTER_RETURN=1"});
}

// The two crash cases over kvx's socket transport: a forced close resets its connection, and
// nothing of it outlives the close.
TEST_CASE("socket transport: the cut peer exits while the prefill agent still runs", "[fault]") {
  runPrefillSide("netns reopen: prefill side",
                 {"KVX_NETNS_DATA_PATH=socket", "KVX_REOPEN_DECODE_EXITS_FIRST=1"});
}

TEST_CASE("socket transport: the cut link returns and stays idle", "[fault]") {
  runPrefillSide("netns reopen: prefill side",
                 {"KVX_NETNS_DATA_PATH=socket", "KVX_REOPEN_IDLE_AFTER_RETURN=1"});
}

TEST_CASE("netns reopen: prefill side", "[.]") {
  const NetnsNames n = pairNames();
  const fault::ScratchDir scratch;
  const std::string& dir = scratch.path();
  DecodeProcess far = startDecode(n, kBlocks, dir + "/decode.log");
  // In this (the prefill) namespace: its traffic never crosses the veth pair.
  DecodeProcess near = fault::startDecode("near", dataPath(), kBlocks, dir + "/near.log");
  INFO("decode agent logs " << far.log << ", " << near.log);
  auto created = KvAgent::create(prefillOptions(n, kBlocks));
  REQUIRE(created.isOk());
  KvAgent& p = **created;
  REQUIRE(p.connect(far.address, deadlineIn(10s)).isOk());
  REQUIRE(p.connect(near.address, deadlineIn(10s)).isOk());
  (void)moveVerified(p, far, "warm-far", 3);
  (void)moveVerified(p, near, "warm-near", 3);

  const std::vector<std::string> doomed = {startLayerwise(p, "cut-0"), startLayerwise(p, "cut-1")};
  dropPackets(n, 100, dir);
  const auto cutAt = Clock::now();
  // More layers go out over the cut link and stay queued there.
  for (const std::string& id : doomed) {
    for (std::uint32_t layer = 1; layer + 1 < fault::kLayers; ++layer) {
      REQUIRE(p.layerReady(id, layer).isOk());
    }
  }
  std::this_thread::sleep_for(200ms);
  for (const std::string& id : doomed) {
    const Status cancelled = p.cancel(id);
    INFO("cancel " << id << ": " << cancelled.toString());
    CHECK(cancelled.isOk());
  }
  for (const std::string& id : doomed) {
    auto end = p.wait(id, cutAt + fault::failureBound());
    auto state = p.status(id);
    REQUIRE(state.isOk());
    INFO(id << " ended " << toString(state->state) << ": " << end.status().toString());
    CHECK(state->state == KvRequestState::kFailed);
  }

  // The link to "decode" waits to be reopened, or has been given up with the peer; "near" is
  // served all along.
  std::vector<double> nearMs;
  for (int i = 0; i < 3; ++i) {
    const auto started = Clock::now();
    (void)moveVerified(p, near, "near-" + std::to_string(i), 4, started + kNearBound);
    nearMs.push_back(millis(Clock::now() - started));
    std::this_thread::sleep_for(300ms);
  }
  REQUIRE(fault::waitPeerGone(p, "decode", cutAt + fault::failureBound() + 5s));

  restoreLink(n);
  // The hidden case leaves the link idle a while, as a server between requests would: what
  // the cut left queued arrives, and UCX 1.13.1 may crash (see the hidden case).
  if (std::getenv("KVX_REOPEN_IDLE_AFTER_RETURN") != nullptr) {
    std::this_thread::sleep_for(kIdleAfterReturn);
  }
  std::string lastError;
  const int attempts = reconnect(p, far.address, deadlineIn(15s), lastError);
  INFO("reconnecting after the cut: " << lastError);
  REQUIRE(attempts > 0);
  (void)moveVerified(p, far, "after", 4);
  if (std::getenv("KVX_REOPEN_DECODE_EXITS_FIRST") == nullptr) stopPrefillFirst(*created);

  const nlohmann::json farStats = stopAndCheckDecode(far);
  const nlohmann::json nearStats = stopAndCheckDecode(near);
  CHECK(farStats["arrivals"] == 2);   // warm-far and after; the cancelled ones never arrive
  CHECK(nearStats["arrivals"] == 4);  // warm-near and near-0..2
  for (const std::string& id : doomed) CHECK_FALSE(arrived(far, id));
  std::printf(
      "netns reopen (%s): with the link to 'decode' cut and its data path reset, 3 "
      "requests to 'near' took %.1f, %.1f and %.1f ms (verified); 'decode' reconnected in %d "
      "attempt(s) once the link returned\n",
      dataPath().c_str(), nearMs[0], nearMs[1], nearMs[2], attempts);
  std::fflush(stdout);
}
