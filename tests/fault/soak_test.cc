// kvx-test-labels: fault multiprocess slow
// Soak: random transfers into a `kvx agent --role decode --verify` process that is restarted
// over and over under the same name. Each lifetime of the decode agent (an epoch) takes a
// random stream from the in-process prefill agent: requests of random sizes, a quarter of
// them layer-wise, some cancelled at a random moment. The epoch ends at a random time with
// either
//  - a clean stop (SIGTERM while requests are in flight): the agent's STATS must show every
//    block it received verified, none corrupt, every block back in its pool; or
//  - kill -9: the stream is drained first and the agent seen to have released (so checked)
//    everything it received, then layer-wise requests are started and the agent killed
//    while their layers move; those fail with PEER_FAILED within peerTimeout + 1 s.
// Every completed request must have arrived (in that agent's log) and verified; every
// request must end (completed, cancelled, or failed by the restart) before its deadline; no
// other failure is allowed. The test process's file descriptors and resident memory must
// stay bounded. KVX_SOAK_SECONDS sets the duration (default 300), KVX_SOAK_SEED the seed.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <stop_token>

#include "tests/fault/fault_fixture.h"

using namespace kvx;
using namespace kvx::test::fault;

namespace {

constexpr int kDefaultSeconds = 300;
constexpr std::size_t kWindow = 8;           // requests in flight
constexpr std::uint64_t kMaxBlocks = 64;     // per request (4 MiB)
constexpr auto kRequestTimeout = 10s;        // every request ends by then
constexpr auto kPollSlack = 1s;              // this loop's own lateness in noticing an end
constexpr std::uint64_t kPoolBlocks = 1024;  // each side
constexpr std::size_t kSoakFdGrowthLimit = 16;
// The prefill agent keeps the last 65,536 finished requests' statuses, which is allowed.
constexpr std::uint64_t kSoakRssGrowthLimitKib = 96 * 1024;

int envInt(const char* name, int fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  const int value = std::atoi(text);
  return value > 0 ? value : fallback;
}

// The data path both agents use: KVX_SOAK_DATA_PATH (shm, tcp or socket), shm by default.
std::string soakDataPath() {
  const char* text = std::getenv("KVX_SOAK_DATA_PATH");
  return text == nullptr || *text == '\0' ? "shm" : text;
}

struct Totals {
  std::uint64_t requests = 0;
  std::uint64_t completed = 0;
  std::uint64_t verifiedBlocks = 0;
  std::uint64_t cancelled = 0;
  std::uint64_t failedByRestart = 0;
  std::uint64_t corrupt = 0;
  std::uint64_t inFlightAtStop = 0;  // requests in flight when a SIGTERM was sent
  int kills = 0;
  int stops = 0;
  std::chrono::milliseconds worstEnd{0};
  std::vector<std::string> unexpected;  // "id: status", each a test failure
};

// The random stream of one prefill agent, request by request. Main thread only.
class Stream {
 public:
  Stream(KvAgent& prefill, std::uint32_t seed, Totals& totals)
      : prefill_(prefill), random_(seed), totals_(totals) {}

  void beginEpoch(int epoch) {
    epoch_ = epoch;
    restarting_ = false;
    completedThisEpoch_.clear();
  }
  // From now on, a failure with PEER_FAILED or CANCELLED is the restart's doing.
  void restarting() { restarting_ = true; }

  // Submits one request if fewer than kWindow are in flight.
  void topUp() {
    if (live_.size() >= kWindow) return;
    Live r;
    r.id = "e" + std::to_string(epoch_) + "-" + std::to_string(next_++);
    // Log-uniform sizes: mostly small, some up to kMaxBlocks.
    const double scale = std::uniform_real_distribution<double>(0, std::log(kMaxBlocks))(random_);
    r.blocks = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::exp(scale)));
    r.layerwise = random_() % 4 == 0;
    const std::uint64_t tokens = r.blocks * kTokensPerBlock - random_() % kTokensPerBlock;
    KvRequestSpec spec = makeRequest(prefill_, r.id, tokens, "decode", r.layerwise);
    spec.timeout = kRequestTimeout;
    if (random_() % 8 == 0)
      r.cancelAt = Clock::now() + std::chrono::microseconds(random_() % 20000);
    const Status submitted = prefill_.submit(spec);
    INFO(r.id << ": " << submitted.toString());
    REQUIRE(submitted.isOk());
    r.submitted = Clock::now();
    ++totals_.requests;
    live_.push_back(std::move(r));
  }

  // Cancels what is due, hands over the next layer of layer-wise requests, and retires the
  // requests that ended.
  void pump() {
    const auto now = Clock::now();
    for (auto it = live_.begin(); it != live_.end();) {
      if (it->cancelAt && now >= *it->cancelAt) {
        it->cancelAt.reset();
        it->cancelled = true;
        (void)prefill_.cancel(it->id);  // may lose the race with the end
      }
      if (it->layerwise && it->nextLayer < kLayers) {
        (void)prefill_.layerReady(it->id, it->nextLayer++);  // refused once it ended
      }
      auto status = prefill_.status(it->id);
      if (!status.isOk()) FAIL(it->id << ": " << status.status().toString());
      if (isTerminal(status->state)) {
        retire(*it, *status);
        it = live_.erase(it);
      } else {
        ++it;
      }
    }
    std::this_thread::sleep_for(1ms);
  }

  // Submits no more; pumps until every request ended. False at `deadline`.
  bool drain(Deadline deadline) {
    while (!live_.empty() && Clock::now() < deadline) pump();
    return live_.empty();
  }

  const std::vector<std::string>& completedThisEpoch() const { return completedThisEpoch_; }
  std::size_t inFlight() const { return live_.size(); }

 private:
  struct Live {
    std::string id;
    std::uint64_t blocks = 0;
    bool layerwise = false;
    std::uint32_t nextLayer = 0;
    std::optional<Clock::time_point> cancelAt;
    bool cancelled = false;
    Clock::time_point submitted;
  };

  void retire(const Live& r, const KvRequestStatus& s) {
    const auto took =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - r.submitted);
    totals_.worstEnd = std::max(totals_.worstEnd, took);
    if (took > kRequestTimeout + kPollSlack) {
      totals_.unexpected.push_back(r.id + ": ended only after " + std::to_string(took.count()) +
                                   " ms");
    }
    const StatusCode code = s.status.code();
    if (s.state == KvRequestState::kReleased) {
      ++totals_.completed;
      totals_.verifiedBlocks += r.blocks;
      completedThisEpoch_.push_back(r.id);
    } else if (r.cancelled && code == StatusCode::kCancelled) {
      ++totals_.cancelled;
    } else if (restarting_ && (code == StatusCode::kPeerFailed || code == StatusCode::kCancelled)) {
      ++totals_.failedByRestart;
    } else {
      totals_.unexpected.push_back(r.id + ": " + s.status.toString());
    }
  }

  KvAgent& prefill_;
  std::mt19937 random_;
  Totals& totals_;
  int epoch_ = 0;
  std::uint64_t next_ = 0;
  bool restarting_ = false;
  std::list<Live> live_;
  std::vector<std::string> completedThisEpoch_;
};

// Every request the prefill agent saw complete arrived at this decode agent, and the agent
// found no corrupt or unverifiable block.
void checkLog(const DecodeProcess& decode, const std::vector<std::string>& completed,
              Totals& totals) {
  const std::string log = decode.logText();
  INFO("decode agent log " << decode.log);
  for (const std::string& id : completed) {
    if (log.find("arrival " + id + " ") == std::string::npos) {
      FAIL_CHECK("request " << id << " completed but never arrived");
    }
  }
  for (std::size_t at = log.find("CORRUPT"); at != std::string::npos;
       at = log.find("CORRUPT", at + 1)) {
    ++totals.corrupt;
  }
  CHECK(log.find("CORRUPT") == std::string::npos);
  CHECK(log.find("cannot verify") == std::string::npos);
}

// SIGTERM while requests are in flight.
void stopEpoch(DecodeProcess& decode, KvAgent& prefill, Stream& stream, Totals& totals) {
  stream.restarting();
  totals.inFlightAtStop += stream.inFlight();
  REQUIRE(::kill(decode.pid(), SIGTERM) == 0);
  REQUIRE(stream.drain(deadlineIn(kRequestTimeout + kPollSlack)));
  const nlohmann::json stats = decode.awaitStats();
  INFO("decode agent STATS " << stats.dump() << "; log " << decode.log);
  totals.corrupt += stats["corruptBlocks"].get<std::uint64_t>();
  CHECK(stats["corruptBlocks"] == 0);
  CHECK(stats["lateWrites"] == 0);  // nothing of a cancelled request landed in a free block
  CHECK(stats["blocksVerified"] == stats["blocks"]);
  CHECK(stats["freeBlocks"] == stats["totalBlocks"]);
  CHECK(stats["arrivals"].get<std::size_t>() >= stream.completedThisEpoch().size());
  checkLog(decode, stream.completedThisEpoch(), totals);
  REQUIRE(waitPeerGone(prefill, "decode", deadlineIn(5s)));
  ++totals.stops;
}

// kill -9 while layer-wise requests move, once everything before them is known verified.
void killEpoch(int epoch, DecodeProcess& decode, KvAgent& prefill, Stream& stream,
               std::mt19937& random, Totals& totals) {
  REQUIRE(stream.drain(deadlineIn(kRequestTimeout + kPollSlack)));
  // Released means checked: the log now says all there is to say about those requests.
  REQUIRE(waitPeerIdle(prefill, "decode", deadlineIn(10s)));

  std::vector<std::string> doomed;
  const int count = 1 + static_cast<int>(random() % 3);
  for (int j = 0; j < count; ++j) {
    const std::string id = "e" + std::to_string(epoch) + "-doomed-" + std::to_string(j);
    const std::uint64_t blocks = 1 + random() % 16;
    REQUIRE(
        prefill.submit(makeRequest(prefill, id, blocks * kTokensPerBlock, "decode", true)).isOk());
    REQUIRE(prefill.layerReady(id, 0).isOk());
    doomed.push_back(id);
    ++totals.requests;
  }
  for (const std::string& id : doomed) {
    const KvRequestStatus s =
        waitState(prefill, id, KvRequestState::kTransferring, deadlineIn(10s));
    INFO(id << " is " << toString(s.state) << ": " << s.status.toString());
    REQUIRE(s.state == KvRequestState::kTransferring);
  }
  std::jthread layers([&prefill, &doomed](std::stop_token stop) {
    for (std::uint32_t layer = 1; layer + 1 < kLayers && !stop.stop_requested(); ++layer) {
      for (const std::string& id : doomed) (void)prefill.layerReady(id, layer);
      std::this_thread::sleep_for(1ms);
    }
  });
  std::this_thread::sleep_for(std::chrono::microseconds(random() % 4000));
  REQUIRE(::kill(decode.pid(), SIGKILL) == 0);
  const auto killed = Clock::now();
  for (const std::string& id : doomed) {
    auto end = prefill.wait(id, killed + failureBound());
    auto s = prefill.status(id);
    REQUIRE(s.isOk());
    INFO(id << " ended " << toString(s->state) << ": " << end.status().toString());
    CHECK(s->state == KvRequestState::kFailed);
    CHECK(end.status().code() == StatusCode::kPeerFailed);
    ++totals.failedByRestart;
  }
  layers.request_stop();
  layers.join();
  CHECK(decode.process->waitExit(5s) == 128 + SIGKILL);
  checkLog(decode, stream.completedThisEpoch(), totals);
  REQUIRE(waitPeerGone(prefill, "decode", deadlineIn(5s)));
  REQUIRE(waitPoolFree(prefill, deadlineIn(5s)));
  ++totals.kills;
}

}  // namespace

TEST_CASE("soak: random transfers, cancels and decode agent restarts", "[fault][slow]") {
  const int seconds = envInt("KVX_SOAK_SECONDS", kDefaultSeconds);
  const auto seed = static_cast<std::uint32_t>(
      envInt("KVX_SOAK_SEED", static_cast<int>(std::random_device{}() & 0x7fffffff)));
  std::printf("soak: %d s, seed %u (KVX_SOAK_SEED), data path %s (KVX_SOAK_DATA_PATH)\n", seconds,
              seed, soakDataPath().c_str());
  std::fflush(stdout);
  const ScratchDir scratch;
  const std::string& dir = scratch.path();
  KvAgentOptions options = prefillOptions("prefill", soakDataPath(), kPoolBlocks);
  options.requestTimeout = kRequestTimeout;
  auto created = KvAgent::create(options);
  REQUIRE(created.isOk());
  KvAgent& prefill = **created;
  std::mt19937 random(seed);
  Totals totals;
  Stream stream(prefill, seed + 1, totals);

  const auto start = Clock::now();
  const auto end = start + std::chrono::seconds(seconds);
  auto nextReport = start + 30s;
  std::size_t fdsAfterWarmup = 0;
  std::uint64_t rssAfterWarmupKib = 0;
  int epoch = 0;
  while (Clock::now() < end || epoch == 0) {
    const std::string log = dir + "/decode-" + std::to_string(epoch) + ".log";
    DecodeProcess decode = startDecode("decode", soakDataPath(), kPoolBlocks, log);
    auto peer = prefill.connect(decode.address, deadlineIn(10s));
    INFO("epoch " << epoch << ": " << (peer.isOk() ? *peer : peer.status().toString()));
    REQUIRE(peer.isOk());
    stream.beginEpoch(epoch);
    const auto epochEnd =
        std::min(end, Clock::now() + std::chrono::milliseconds(1000 + random() % 5000));
    while (Clock::now() < epochEnd) {
      stream.topUp();
      stream.pump();
    }
    if (random() % 2 == 0) {
      killEpoch(epoch, decode, prefill, stream, random, totals);
    } else {
      stopEpoch(decode, prefill, stream, totals);
    }
    for (const std::string& problem : totals.unexpected) FAIL_CHECK(problem);
    REQUIRE(totals.unexpected.empty());
    std::filesystem::remove(log);
    ++epoch;
    if (epoch == 2) {
      fdsAfterWarmup = openFileDescriptors();
      rssAfterWarmupKib = residentKib();
    }
    if (Clock::now() >= nextReport) {
      std::printf(
          "soak: %.0f s, %d restarts, %llu requests, %llu completed, fds %zu, RSS %llu KiB\n",
          std::chrono::duration<double>(Clock::now() - start).count(), epoch,
          static_cast<unsigned long long>(totals.requests),
          static_cast<unsigned long long>(totals.completed), openFileDescriptors(),
          static_cast<unsigned long long>(residentKib()));
      std::fflush(stdout);
      nextReport += 30s;
    }
  }
  const std::size_t fds = openFileDescriptors();
  const std::uint64_t rssKib = residentKib();
  std::printf(
      "soak summary: %.0f s, seed %u: requests=%llu completed=%llu (verified blocks %llu) "
      "cancelled=%llu failed-by-restart=%llu restarts=%d (kill -9 %d, clean stop %d with %llu "
      "requests in flight) corrupt=%llu "
      "unexpected=%zu; slowest request end %lld ms (deadline %lld ms); fds %zu -> %zu, RSS %llu "
      "-> %llu KiB\n",
      std::chrono::duration<double>(Clock::now() - start).count(), seed,
      static_cast<unsigned long long>(totals.requests),
      static_cast<unsigned long long>(totals.completed),
      static_cast<unsigned long long>(totals.verifiedBlocks),
      static_cast<unsigned long long>(totals.cancelled),
      static_cast<unsigned long long>(totals.failedByRestart), totals.kills + totals.stops,
      totals.kills, totals.stops, static_cast<unsigned long long>(totals.inFlightAtStop),
      static_cast<unsigned long long>(totals.corrupt), totals.unexpected.size(),
      static_cast<long long>(totals.worstEnd.count()),
      static_cast<long long>(std::chrono::milliseconds(kRequestTimeout).count()), fdsAfterWarmup,
      fds, static_cast<unsigned long long>(rssAfterWarmupKib),
      static_cast<unsigned long long>(rssKib));
  std::fflush(stdout);
  CHECK(totals.corrupt == 0);
  CHECK(totals.completed > 0);
  CHECK(totals.cancelled > 0);
  CHECK(totals.kills + totals.stops == epoch);
  if (epoch > 2) {
    CHECK(fds <= fdsAfterWarmup + kSoakFdGrowthLimit);
    CHECK(rssKib <= rssAfterWarmupKib + kSoakRssGrowthLimitKib);
  }
}
