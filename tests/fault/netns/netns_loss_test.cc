// kvx-test-labels: fault multiprocess
// Random packet loss: the prefill agent (in-process, in one network namespace) moves a stream
// of requests over UCX tcp on a veth pair to a `kvx agent --role decode --verify` process (in
// another), half pushed and half pulled, while nftables drops 10% of the packets each way at
// random (KVX_NETNS_LOSS_PERCENT to change it). Every request
// ends by its deadline: released, with every block verified by the decode agent, or failed
// with a clear Status (PEER_FAILED when retransmissions starve the heartbeats past the peer
// timeout, TIMED_OUT at the request's deadline); after a peer failure the prefill agent
// connects again and goes on (at heavier loss, when it cannot connect within 15 s, it stops
// submitting and says so). Nothing hangs. Once the loss stops, a request moves and verifies,
// and the decode agent ends with every block back and none corrupt.
#include <algorithm>
#include <cmath>
#include <deque>
#include <map>

#include "tests/fault/netns/netns_fixture.h"

using namespace kvx;
using namespace kvx::test;
using namespace kvx::test::netns;

namespace {

constexpr int kDefaultLossPercent = 10;
constexpr int kRequests = 24;
constexpr std::size_t kOutstanding = 4;
constexpr std::uint64_t kBlocksPerRequest = 4;  // 256 KiB
constexpr auto kRequestTimeout = 15s;
constexpr auto kWaitSlack = 1s;  // past its deadline, a request that has not ended hangs

// KVX_NETNS_LOSS_PERCENT overrides the loss (1-99), to explore; the default is the test's.
int lossPercent() {
  const char* text = std::getenv("KVX_NETNS_LOSS_PERCENT");
  const int percent = text == nullptr ? 0 : std::atoi(text);
  return percent > 0 && percent < 100 ? percent : kDefaultLossPercent;
}

struct Pending {
  std::string id;
  Deadline deadline;
};

bool decodeConnected(KvAgent& prefill) {
  for (const KvPeerStatus& peer : prefill.peers()) {
    if (peer.name == "decode") return true;
  }
  return false;
}

// Connects (again) until the decode agent takes the link, by `deadline`. Each connect gets
// all the time left: under heavy loss one takes seconds (it tries an unanswered hello again
// on its own), and the agent's reconnector may be dialing at the same time.
bool ensureConnected(KvAgent& prefill, const std::string& address, Deadline deadline,
                     int& reconnects) {
  if (decodeConnected(prefill)) return true;
  while (Clock::now() < deadline) {
    if (prefill.connect(address, deadline).isOk()) {
      ++reconnects;
      return true;
    }
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

}  // namespace

TEST_CASE("requests under random packet loss complete and verify, or fail clearly in time",
          "[fault]") {
  const std::string dataPath = GENERATE("tcp", "socket");
  runPrefillSide("netns loss: prefill side", {"KVX_NETNS_DATA_PATH=" + dataPath});
}

TEST_CASE("netns loss: prefill side", "[.]") {
  const NetnsNames n = pairNames();
  const fault::ScratchDir scratch;
  const std::string& dir = scratch.path();
  DecodeProcess decode = startDecode(n, 128, dir + "/decode.log");
  INFO("decode agent log " << decode.log);
  KvAgentOptions options = prefillOptions(n, 128);
  options.requestTimeout = kRequestTimeout;
  auto created = KvAgent::create(options);
  REQUIRE(created.isOk());
  KvAgent& p = **created;
  REQUIRE(p.connect(decode.address, deadlineIn(10s)).isOk());

  const int loss = lossPercent();
  dropPackets(n, loss, dir);
  const auto lossFrom = Clock::now();
  std::deque<Pending> pending;
  std::vector<std::string> released;
  std::vector<double> latencies;
  std::map<std::string, int> failures;  // by status code
  std::string firstFailure;
  double latestMs = 0;  // the latest end of a request relative to its deadline
  std::string latestId;
  int reconnects = 0;
  int next = 0;
  bool unreachable = false;  // no connection within 15 s under loss: stop submitting
  while (next < kRequests || !pending.empty()) {
    while (!unreachable && next < kRequests && pending.size() < kOutstanding) {
      if (!ensureConnected(p, decode.address, deadlineIn(15s), reconnects)) {
        unreachable = true;
        break;
      }
      const std::string id = "loss-" + std::to_string(next);
      KvRequestSpec spec =
          fault::makeRequest(p, id, kBlocksPerRequest * fault::kTokensPerBlock, "decode", false);
      spec.mode = next++ % 2 == 0 ? KvMode::kPush : KvMode::kPull;
      REQUIRE(p.submit(spec).isOk());
      pending.push_back({id, deadlineIn(kRequestTimeout)});
    }
    // Heavy loss can keep every connect from completing (each waits out TCP's
    // retransmissions); that is not a hang as long as each attempt ends by its deadline. The
    // requests not submitted then are reported; the link must work again once it returns.
    if (pending.empty()) break;
    const Pending oldest = pending.front();
    pending.pop_front();
    auto end = p.wait(oldest.id, oldest.deadline + kWaitSlack);
    auto state = p.status(oldest.id);
    REQUIRE(state.isOk());
    if (!isTerminal(state->state)) {
      // It should have ended by its deadline; find out how late it ends, if at all.
      const std::string then = std::string(toString(state->state));
      end = p.wait(oldest.id, oldest.deadline + kWaitSlack + 10s);
      state = p.status(oldest.id);
      REQUIRE(state.isOk());
      FAIL_CHECK(oldest.id << " was still " << then << " " << kWaitSlack.count()
                           << " s after its deadline; "
                           << std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() -
                                                                                    oldest.deadline)
                                  .count()
                           << " ms after it, it is " << toString(state->state) << ": "
                           << end.status().toString());
      REQUIRE(isTerminal(state->state));
    }
    INFO(oldest.id << " is " << toString(state->state) << ": " << end.status().toString());
    // When it ended against its deadline (its latency runs from about when it was submitted).
    const double late = millis(state->latency) - millis(kRequestTimeout);
    if (latestId.empty() || late > latestMs) {
      latestMs = late;
      latestId = oldest.id;
    }
    if (state->state == KvRequestState::kReleased) {
      released.push_back(oldest.id);
      latencies.push_back(millis(state->latency));
      if (state->latency > kRequestTimeout / 2) {
        std::printf("netns loss: %s (%s) took %.1f ms\n", oldest.id.c_str(),
                    std::string(toString(state->mode)).c_str(), millis(state->latency));
      }
      continue;
    }
    const StatusCode code = end.status().code();
    CHECK((code == StatusCode::kPeerFailed || code == StatusCode::kTimedOut));
    CHECK_FALSE(end.status().message().empty());
    ++failures[std::string(toString(code))];
    if (firstFailure.empty()) firstFailure = end.status().toString();
  }
  const double lossSeconds = std::chrono::duration<double>(Clock::now() - lossFrom).count();
  // At the test's own loss, connecting again always works in time.
  if (loss <= kDefaultLossPercent) CHECK_FALSE(unreachable);

  restoreLink(n);
  REQUIRE(ensureConnected(p, decode.address, deadlineIn(15s), reconnects));
  REQUIRE(
      p.submit(fault::makeRequest(p, "after", 8 * fault::kTokensPerBlock, "decode", false)).isOk());
  auto after = p.wait("after", deadlineIn(20s));
  INFO("after: " << (after.isOk() ? "released" : after.status().toString()));
  REQUIRE(after.isOk());
  REQUIRE(fault::waitForLog(decode, "arrival after ", 10s));
  REQUIRE(fault::waitPoolFree(p, deadlineIn(5s)));

  stopPrefillFirst(*created);
  const nlohmann::json stats = stopAndCheckDecode(decode);
  for (const std::string& id : released) {
    INFO(id << " was released on the prefill side");
    CHECK(arrived(decode, id));
  }
  // A request can arrive and verify while its confirmation is lost with the link.
  CHECK(stats["arrivals"].get<std::size_t>() >= released.size() + 1);
  std::sort(latencies.begin(), latencies.end());
  std::string failed;
  for (const auto& [code, count] : failures) {
    failed += (failed.empty() ? "" : ", ") + std::to_string(count) + " " + code;
  }
  std::printf(
      "netns loss (%s): %d%% of packets dropped each way: %zu of %d requests (%llu KiB each, push "
      "and pull) "
      "released and verified in %.1f s, latency median %.1f ms, worst %.1f ms; %s%s%s; the "
      "prefill agent reconnected %d time(s)%s; decode agent verified %s of %s blocks\n",
      dataPath().c_str(), loss, released.size(), kRequests,
      static_cast<unsigned long long>(kBlocksPerRequest * 64), lossSeconds,
      latencies.empty() ? 0.0 : latencies[latencies.size() / 2],
      latencies.empty() ? 0.0 : latencies.back(),
      failed.empty() ? "none failed" : "failed: ", failed.c_str(),
      firstFailure.empty() ? "" : (" (first: " + firstFailure + ")").c_str(), reconnects,
      unreachable ? (", then could not connect for 15 s, so " + std::to_string(kRequests - next) +
                     " request(s) were never submitted")
                        .c_str()
                  : "",
      stats["blocksVerified"].dump().c_str(), stats["blocks"].dump().c_str());
  std::printf("netns loss: the latest request (%s) ended %.0f ms %s its deadline\n",
              latestId.c_str(), std::abs(latestMs), latestMs > 0 ? "after" : "before");
  std::fflush(stdout);
}
