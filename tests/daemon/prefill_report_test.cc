// kvx-test-labels: unit serial
// The prefill agent's --report: the keys `kvx demo` and `kvx bench` read (daemon/prefill_report.h).
#include "daemon/prefill_report.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

using namespace kvx;
using namespace kvx::daemon;

TEST_CASE("the prefill report carries per-request timing, sizes and CPU time", "[prefill_report]") {
  ReplayResult result;
  RequestRecord part;
  part.index = 3;
  part.id = "prompt-3@d1";
  part.destinationId = "prompt-3";
  part.decodeRank = 1;
  part.destination = "decode-1";
  part.heads = 2;
  part.submitNs = 5000;
  part.doneNs = 9000;
  part.submitted = true;
  part.released = true;
  part.status.state = KvRequestState::kReleased;
  part.status.bytes = 4096;
  part.status.descriptors = 64;
  part.status.operations = 8;
  result.requests.push_back(part);
  part.id = "prompt-3@d0";
  part.decodeRank = 0;
  result.requests.push_back(part);
  result.cpuStart = CpuTime{1, 2};
  result.cpuEnd = CpuTime{3, 4};
  auto tp = makeTpPlan(8, false, 2, 1, 4);
  REQUIRE(tp.isOk());

  const auto json = replayReport("prefill-1", result, *tp, {}, KvPoolUsage{16, 16, 1, 16, 0});
  CHECK(json["agent"] == "prefill-1");
  REQUIRE(json["requests"].size() == 2);
  const auto& r = json["requests"][0];
  CHECK(r["id"] == "prompt-3@d1");
  CHECK(r["destinationId"] == "prompt-3");
  CHECK(r["decodeRank"] == 1);
  CHECK(r["heads"] == 2);
  CHECK(r["peer"] == "decode-1");  // the pinned rank while the status has none
  CHECK(r["submitNs"] == 5000);
  CHECK(r["doneNs"] == 9000);
  CHECK(r["bytes"] == 4096);
  CHECK(r["descriptors"] == 64);
  CHECK(r["operations"] == 8);
  CHECK(r["released"] == true);
  CHECK(json["totals"]["requests"] == 2);
  CHECK(json["totals"]["prompts"] == 1);
  CHECK(json["totals"]["bytes"] == 8192);
  CHECK(json["tp"]["size"] == 2);
  CHECK(json["tp"]["firstHead"] == 4);
  CHECK(json["tp"]["heads"] == 4);
  CHECK(json["tp"]["decodeSize"] == 4);
  CHECK(json["cpuStart"]["userUs"] == 1);
  CHECK(json["cpuEnd"]["sysUs"] == 4);
  CHECK(json["cpu"] == json["cpuEnd"]);
  CHECK(json["usageAtExit"]["freeBlocks"] == 16);
}

TEST_CASE("an output file that cannot be written fails before the run, naming the option",
          "[prefill_report]") {
  const Status refused = prepareOutputFile("/nonexistent-dir/report.json", "--report");
  CHECK(refused.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(refused.message(), Catch::StartsWith("--report '/nonexistent-dir/report.json' cannot "
                                                  "be written: No such file or directory"));
  char dir[] = "/tmp/kvx-output-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/report.json";
  CHECK(prepareOutputFile(path, "--report").isOk());
  CHECK(std::filesystem::exists(path));
  CHECK(writeJsonFile(path, nlohmann::json{{"ok", true}}).isOk());
  std::filesystem::remove_all(dir);
}

TEST_CASE("requests a stop cut short are counted apart from failures", "[prefill_report]") {
  ReplayResult result;
  result.stopped = true;
  RequestRecord r;
  r.id = "p-0";
  r.submitted = true;
  r.released = true;
  result.requests.push_back(r);
  r.id = "p-1";  // cancelled in flight by the stop
  r.released = false;
  r.stopped = true;
  r.error = "CANCELLED: agent stopping on SIGTERM";
  result.requests.push_back(r);
  r.id = "p-2";  // never submitted
  r.submitted = false;
  r.error = "not submitted: the agent was stopped (SIGTERM)";
  result.requests.push_back(r);
  r.id = "p-3";  // failed for its own reason
  r.submitted = true;
  r.stopped = false;
  r.error = "PEER_FAILED: decode-0 died";
  result.requests.push_back(r);
  auto tp = makeTpPlan(8, false, 1, 0, 1);
  REQUIRE(tp.isOk());
  const auto json = replayReport("prefill-0", result, *tp, {}, KvPoolUsage{});
  const auto& totals = json["totals"];
  CHECK(totals["requests"] == 4);
  CHECK(totals["released"] == 1);
  CHECK(totals["stoppedRequests"] == 2);
  CHECK(totals["failed"] == 1);
  CHECK(json["requests"][1]["stopped"] == true);
}
