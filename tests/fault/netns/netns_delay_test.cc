// kvx-test-labels: fault multiprocess
// Delay: the prefill agent (in-process, in one network namespace) moves requests over UCX tcp
// on a veth pair to a `kvx agent --role decode --verify` process (in another), first on the
// bare link, then with kvx_nfqueue_delay holding every packet that reaches the decode side
// for kDelayMs (NFQUEUE on its raw PREROUTING; tests/fault/netns/nfqueue_delay). Requests
// complete and verify under the delay, and their latency (submit to confirmed) grows by at
// least the one-way delay: a push crosses the delayed direction more than once (placement,
// data, completion). Skips when the program was not built (no libnetfilter_queue).
#include <algorithm>

#include "tests/fault/netns/netns_fixture.h"

using namespace kvx;
using namespace kvx::test;
using namespace kvx::test::netns;

namespace {

constexpr int kDelayMs = 40;
constexpr int kProbes = 7;

// The program: $KVX_NFQUEUE_DELAY (CTest sets it), or next to this test in the build tree.
std::string delayProgram() {
  if (const char* path = std::getenv("KVX_NFQUEUE_DELAY"); path != nullptr && *path != '\0') {
    return path;
  }
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "kvx_nfqueue_delay")
      .string();
}

double medianLatency(KvAgent& prefill, DecodeProcess& decode, const std::string& prefix) {
  std::vector<double> latencies;
  for (int i = 0; i < kProbes; ++i) {
    latencies.push_back(moveVerified(prefill, decode, prefix + std::to_string(i), 1));
  }
  std::sort(latencies.begin(), latencies.end());
  return latencies[latencies.size() / 2];
}

}  // namespace

TEST_CASE("requests under a delayed link complete, verify, and take the delay longer", "[fault]") {
  const std::string program = delayProgram();
  if (!std::filesystem::exists(program)) {
    std::printf("kvx-test-skipped: no %s (built only with libnetfilter_queue)\n", program.c_str());
    return;
  }
  const std::string dataPath = GENERATE("tcp", "socket");
  runPrefillSide("netns delay: prefill side",
                 {"KVX_NFQUEUE_DELAY=" + program, "KVX_NETNS_DATA_PATH=" + dataPath});
}

TEST_CASE("netns delay: prefill side", "[.]") {
  const NetnsNames n = pairNames();
  const fault::ScratchDir scratch;
  const std::string& dir = scratch.path();
  DecodeProcess decode = startDecode(n, 128, dir + "/decode.log");
  INFO("decode agent log " << decode.log);
  auto created = KvAgent::create(prefillOptions(n, 128));
  REQUIRE(created.isOk());
  KvAgent& p = **created;
  REQUIRE(p.connect(decode.address, deadlineIn(10s)).isOk());
  (void)moveVerified(p, decode, "warm", 2);
  const double bare = medianLatency(p, decode, "bare-");

  const std::string delayLog = dir + "/nfqueue_delay.log";
  auto started = ChildProcess::spawn(
      "/bin/sh", {"-c",
                  "exec ip netns exec \"$0\" \"$1\" --queue 0 --delay-ms \"$2\" --iface \"$3\" "
                  "2>" +
                      delayLog,
                  n.decodeNs, delayProgram(), std::to_string(kDelayMs), n.decodeIf});
  REQUIRE(started.isOk());
  ChildProcess delay = std::move(started).value();
  {
    auto ready = delay.readLine(10s);
    INFO("kvx_nfqueue_delay: " << (ready.isOk() ? *ready : ready.status().toString()) << "; "
                               << fault::readFile(delayLog));
    REQUIRE(ready.isOk());
    REQUIRE(*ready == "READY");
  }
  const double delayed = medianLatency(p, decode, "delayed-");
  const double bulk = moveVerified(p, decode, "delayed-bulk", 64);  // 4 MiB
  ::kill(delay.pid(), SIGTERM);
  auto held = delay.readLine(10s);
  INFO("kvx_nfqueue_delay: " << (held.isOk() ? *held : held.status().toString()) << "; "
                             << fault::readFile(delayLog));
  REQUIRE(held.isOk());
  REQUIRE(held->rfind("HELD ", 0) == 0);
  CHECK(std::stoull(held->substr(5)) > 0);
  CHECK(delay.waitExit(10s) == 0);
  const double restored = medianLatency(p, decode, "restored-");

  CHECK(delayed - bare >= kDelayMs);
  CHECK(restored < bare + kDelayMs);
  const nlohmann::json stats = stopAndCheckDecode(decode);
  CHECK(stats["arrivals"] == 1 + 3 * kProbes + 1);
  std::printf(
      "netns delay (%s): %d ms one way (decode side's PREROUTING, %s packets held): median latency "
      "of a 64 KiB request %.1f ms bare, %.1f ms delayed (+%.1f ms = %.1f x the delay), %.1f "
      "ms after the delay was removed; a 4 MiB request took %.1f ms delayed; decode agent "
      "verified %s of %s blocks\n",
      dataPath().c_str(), kDelayMs, held->substr(5).c_str(), bare, delayed, delayed - bare,
      (delayed - bare) / kDelayMs, restored, bulk, stats["blocksVerified"].dump().c_str(),
      stats["blocks"].dump().c_str());
  std::fflush(stdout);
}
