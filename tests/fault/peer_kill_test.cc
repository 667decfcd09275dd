// kvx-test-labels: fault multiprocess
// kill -9 of the decode agent during transfers, over and over. Each iteration starts a fresh
// `kvx agent --role decode --verify` under the same name, connects the in-process prefill
// agent to it, moves requests that it verifies block by block, then kills it while layer-wise
// requests are mid-transfer: those fail with PEER_FAILED within peerTimeout + 1 s, their
// source blocks return to the prefill pool, and the next iteration transfers again. The
// prefill process's file descriptors and resident memory must not grow with the iterations.
// KVX_FAULT_ITERATIONS sets the count; the default is the figure, 100 (about 11 s
// here; 300 take about 40 s), and 30 under a sanitizer.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stop_token>

#include "tests/fault/fault_fixture.h"
#include "tests/support/sanitizer_build.h"

using namespace kvx;
using namespace kvx::test::fault;

namespace {

// The figure, 100, in the plain build; 30 under a sanitizer (where each iteration
// takes about 0.8 s instead of 0.1 s) and on UCX 1.22 (tests/support/sanitizer_build.h).
const int kDefaultIterations = kvx::test::smallWorkloads() ? 30 : 100;
constexpr int kWarmupIterations = 3;  // UCX and allocator caches settle first
constexpr std::size_t kFdGrowthLimit = 8;
constexpr std::uint64_t kRssGrowthLimitKib = 16 * 1024;
// RSS is compared as the lowest of a window of iterations right after the warm-up and the
// lowest of the last window: a leak raises every sample of the last window, a transient peak
// (an allocator arena growing for a while, another test's load under ctest -j2: one sample
// was seen 16.5 MiB up) raises only some.
constexpr std::size_t kRssWindow = 10;

// No RSS bound under a sanitizer. AddressSanitizer's quarantine keeps freed memory out of
// reuse (256 MiB by default), so RSS grows under it whatever the code does (seen: 85 -> 430
// MiB); LeakSanitizer checks for leaks at exit instead. ThreadSanitizer's shadow of the
// addresses the allocator hands out grows likewise (seen: 190 -> 224 MiB in 100 iterations).
// The test says when the bound was not applied.
constexpr bool kRssBoundApplies = !kvx::test::kSanitizerBuild;

// The lowest of `count` samples from index `from`, both clipped to the samples there are.
std::uint64_t lowestOf(const std::vector<std::uint64_t>& samples, std::size_t from,
                       std::size_t count) {
  from = std::min(from, samples.size() - 1);
  const std::size_t end = std::min(samples.size(), from + count);
  return *std::min_element(samples.begin() + static_cast<std::ptrdiff_t>(from),
                           samples.begin() + static_cast<std::ptrdiff_t>(end));
}

int iterationCount() {
  const char* text = std::getenv("KVX_FAULT_ITERATIONS");
  if (text == nullptr || *text == '\0') return kDefaultIterations;
  const int count = std::atoi(text);
  return count > 0 ? count : kDefaultIterations;
}

struct IterationResult {
  std::chrono::milliseconds detection{0};
  std::uint64_t verifiedBlocks = 0;
  bool bulkCut = false;   // the kill landed while the bulk request's data was moving
  int endpointRaces = 0;  // see checkPeerFailure
};

// A request of the killed agent must end PEER_FAILED. A move posted while the engine
// force-closes the peer's link is refused by the closed endpoint; it must still report the
// peer's failure, not FAILED_PRECONDITION "... on a closed UCX endpoint" (counted apart, as
// that race was seen about once in 700 kills before the engine reported the cause).
void checkPeerFailure(const Status& status, IterationResult& result) {
  INFO(status.toString());
  if (status.code() == StatusCode::kFailedPrecondition &&
      status.message().find("on a closed UCX endpoint") != std::string::npos) {
    ++result.endpointRaces;
  }
  CHECK(status.code() == StatusCode::kPeerFailed);
}

constexpr std::uint64_t kBulkBlocks = 384;  // 24 MiB: a few ms of copying on shared memory

IterationResult killOnce(KvAgent& prefill, int iteration, const std::string& dir) {
  const std::string p = "it" + std::to_string(iteration);
  DecodeProcess decode = startDecode("decode", "shm", 512, dir + "/decode-" + p + ".log");
  INFO("iteration " << iteration << ", decode agent log " << decode.log);
  auto peer = prefill.connect(decode.address, deadlineIn(10s));
  INFO((peer.isOk() ? *peer : peer.status().toString()));
  REQUIRE(peer.isOk());
  REQUIRE(*peer == "decode");

  // Requests the decode agent completes and verifies. It handles arrivals one at a time, in
  // order, so the marker's arrival in its log means the others' checks are finished.
  const std::vector<std::string> verified = {p + "-v0", p + "-v1"};
  const std::string marker = p + "-marker";
  for (const std::string& id : verified) {
    REQUIRE(prefill.submit(makeRequest(prefill, id, 3 * kTokensPerBlock, "decode", false)).isOk());
  }
  REQUIRE(prefill.submit(makeRequest(prefill, marker, kTokensPerBlock, "decode", false)).isOk());
  for (const std::string& id : {verified[0], verified[1], marker}) {
    auto done = prefill.wait(id, deadlineIn(20s));
    INFO(id << ": " << (done.isOk() ? "released" : done.status().toString()));
    REQUIRE(done.isOk());
  }
  REQUIRE(waitForLog(decode, "arrival " + marker + " ", 10s));
  const std::string log = decode.logText();
  for (const std::string& id : verified)
    CHECK(log.find("arrival " + id + " ") != std::string::npos);
  CHECK(log.find("CORRUPT") == std::string::npos);
  CHECK(log.find("cannot verify") == std::string::npos);

  // Layer-wise requests with their first layer moved; more layers are handed over (and
  // moved) while the agent dies. None can complete: the last layer is never ready.
  std::vector<std::string> doomed;
  for (int j = 0; j < 3; ++j) {
    const std::string id = p + "-k" + std::to_string(j);
    REQUIRE(prefill.submit(makeRequest(prefill, id, 4 * kTokensPerBlock, "decode", true)).isOk());
    REQUIRE(prefill.layerReady(id, 0).isOk());
    doomed.push_back(id);
  }
  for (const std::string& id : doomed) {
    const KvRequestStatus s =
        waitState(prefill, id, KvRequestState::kTransferring, deadlineIn(10s));
    INFO(id << " is " << toString(s.state) << ": " << s.status.toString());
    REQUIRE(s.state == KvRequestState::kTransferring);
  }
  // A large whole request, placed and moving when the kill comes (or just finished).
  const std::string bulk = p + "-bulk";
  REQUIRE(prefill.submit(makeRequest(prefill, bulk, kBulkBlocks * kTokensPerBlock, "decode", false))
              .isOk());
  const KvRequestStatus placed =
      waitState(prefill, bulk, KvRequestState::kTransferring, deadlineIn(10s));
  INFO(bulk << " is " << toString(placed.state) << ": " << placed.status.toString());
  REQUIRE(
      (placed.state == KvRequestState::kTransferring || placed.state == KvRequestState::kReleased));
  std::jthread streamer([&prefill, &doomed](std::stop_token stop) {
    for (std::uint32_t layer = 1; layer + 1 < kLayers && !stop.stop_requested(); ++layer) {
      for (const std::string& id : doomed) (void)prefill.layerReady(id, layer);
      std::this_thread::sleep_for(1ms);
    }
  });
  std::mt19937 random(static_cast<std::uint32_t>(iteration));
  std::this_thread::sleep_for(std::chrono::microseconds(random() % 3000));
  REQUIRE(::kill(decode.pid(), SIGKILL) == 0);
  const auto killed = Clock::now();
  IterationResult result;
  for (const std::string& id : doomed) {
    auto end = prefill.wait(id, killed + failureBound());
    auto state = prefill.status(id);
    REQUIRE(state.isOk());
    INFO(id << " ended " << toString(state->state) << ": " << end.status().toString());
    REQUIRE(state->state == KvRequestState::kFailed);
    checkPeerFailure(end.status(), result);
  }
  {
    auto end = prefill.wait(bulk, killed + failureBound());
    auto state = prefill.status(bulk);
    REQUIRE(state.isOk());
    INFO(bulk << " ended " << toString(state->state) << ": " << end.status().toString());
    REQUIRE(isTerminal(state->state));
    if (state->state == KvRequestState::kFailed) {
      checkPeerFailure(end.status(), result);
      result.bulkCut = true;
    }
  }
  result.detection = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - killed);
  result.verifiedBlocks = 2 * 3;
  CHECK(result.detection <= failureBound());
  streamer.request_stop();
  streamer.join();
  CHECK(decode.process->waitExit(5s) == 128 + SIGKILL);

  // The agent forgot the peer and every source block came back.
  REQUIRE(waitPeerGone(prefill, "decode", deadlineIn(5s)));
  REQUIRE(waitPoolFree(prefill, deadlineIn(5s)));
  std::filesystem::remove(decode.log);
  return result;
}

}  // namespace

TEST_CASE("kill -9 of the decode agent during transfers, repeated", "[fault]") {
  const ScratchDir scratch;
  const std::string& dir = scratch.path();
  auto prefill = KvAgent::create(prefillOptions("prefill", "shm", 512));
  REQUIRE(prefill.isOk());
  const int iterations = iterationCount();
  const auto start = Clock::now();
  std::vector<std::chrono::milliseconds> detections;
  std::uint64_t verifiedBlocks = 0;
  int bulkCuts = 0;
  int endpointRaces = 0;
  std::size_t fdsAfterWarmup = 0;
  std::vector<std::uint64_t> rssKibs;  // after each iteration
  for (int i = 0; i < iterations; ++i) {
    const IterationResult r = killOnce(**prefill, i, dir);
    detections.push_back(r.detection);
    verifiedBlocks += r.verifiedBlocks;
    bulkCuts += r.bulkCut ? 1 : 0;
    endpointRaces += r.endpointRaces;
    rssKibs.push_back(residentKib());
    if (i + 1 == std::min(kWarmupIterations, iterations)) fdsAfterWarmup = openFileDescriptors();
    if ((i + 1) % 25 == 0) {
      std::printf(
          "kill -9 fault: %d iterations, worst detection %lld ms, fds %zu, RSS %llu KiB\n", i + 1,
          static_cast<long long>(std::max_element(detections.begin(), detections.end())->count()),
          openFileDescriptors(), static_cast<unsigned long long>(residentKib()));
      std::fflush(stdout);
    }
  }
  const std::size_t fds = openFileDescriptors();
  const std::uint64_t rssAfterWarmupKib = lowestOf(rssKibs, kWarmupIterations - 1, kRssWindow);
  const std::uint64_t rssKib =
      lowestOf(rssKibs, rssKibs.size() - std::min(kRssWindow, rssKibs.size()), kRssWindow);
  std::sort(detections.begin(), detections.end());
  const auto seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf(
      "kill -9 fault: %d iterations in %.1f s, %llu blocks verified, a 24 MiB write cut by the "
      "kill in %d; requests failed after the kill: median %lld ms, worst %lld ms (bound %lld "
      "ms), %d of them FAILED_PRECONDITION (closed endpoint) instead of PEER_FAILED; prefill "
      "fds %zu -> %zu, RSS (lowest of a window) %llu -> %llu KiB\n",
      iterations, seconds, static_cast<unsigned long long>(verifiedBlocks), bulkCuts,
      static_cast<long long>(detections[detections.size() / 2].count()),
      static_cast<long long>(detections.back().count()),
      static_cast<long long>(failureBound().count()), endpointRaces, fdsAfterWarmup, fds,
      static_cast<unsigned long long>(rssAfterWarmupKib), static_cast<unsigned long long>(rssKib));
  std::fflush(stdout);
  CHECK(endpointRaces == 0);
  CHECK(fds <= fdsAfterWarmup + kFdGrowthLimit);
  if (kRssBoundApplies) {
    CHECK(rssKib <= rssAfterWarmupKib + kRssGrowthLimitKib);
  } else {
    std::printf("kill -9 fault: RSS bound not applied under a sanitizer\n");
  }
}
