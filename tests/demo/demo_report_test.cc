// kvx-test-labels: unit serial
#include "demo/demo_report.h"

#include <catch2/catch.hpp>

using namespace kvx::demo;
using nlohmann::json;

namespace {

json request(const std::string& id, bool released, const std::string& peer, std::uint64_t latencyMs,
             const std::string& error = "") {
  return {{"id", id},
          {"released", released},
          {"error", error},
          {"peer", peer},
          {"placement", released ? "fewest bytes in flight (12, 1% of limit)" : ""},
          {"blocks", 10},
          {"prefixBlocks", 2},
          {"bytes", 8 * 2097152},
          {"descriptors", 512},
          {"operations", 16},
          {"queuedNs", latencyMs * 100000},
          {"latencyNs", latencyMs * 1000000}};
}

json decodeStats(std::uint64_t corrupt = 0, std::uint64_t freeBlocks = 64) {
  return {{"arrivals", 2},
          {"blocks", 20},
          {"blocksVerified", 20 - corrupt},
          {"corruptBlocks", corrupt},
          {"errors", 0},
          {"freeBlocks", freeBlocks},
          {"totalBlocks", 64}};
}

DemoInputs cleanRun() {
  DemoInputs in;
  in.title = "test run";
  json report = {{"requests",
                  {request("p-0", true, "decode-0", 10), request("p-1", true, "decode-1", 20),
                   request("p-2", true, "decode-0", 30), request("p-3", true, "decode-1", 40)}},
                 {"totals", {{"wallSeconds", 0.5}}},
                 {"peers", {{{"name", "decode-0"}, {"dataPath", "sysv/memory"}}}},
                 {"usageAtExit", {{"totalBlocks", 128}, {"freeBlocks", 128}}}};
  in.prefills = {{"prefill-0", std::move(report), 0}};
  in.decodes = {{"decode-0", "127.0.0.1:1", decodeStats(), 0},
                {"decode-1", "127.0.0.1:2", decodeStats(), 0}};
  return in;
}

}  // namespace

TEST_CASE("a clean run passes and reports its figures", "[demo_report]") {
  const DemoReport report(cleanRun());
  CHECK(report.passed());
  const json& j = report.json();
  CHECK(j["requests"]["ok"] == 4);
  CHECK(j["requests"]["failed"] == 0);
  CHECK(j["latency"]["p50Ms"] == Approx(20));
  CHECK(j["latency"]["maxMs"] == Approx(40));
  CHECK(j["bytes"] == 4 * 8 * 2097152);
  CHECK(j["gbPerSecond"] == Approx(4.0 * 8 * 2097152 / 0.5 / 1e9));
  CHECK(j["descriptorsPerOperation"] == Approx(32));
  CHECK(j["prefixBlocks"] == 8);
  CHECK(j["placement"]["decode-0"]["requests"] == 2);
  CHECK(j["placement"]["decode-0"]["reasons"]["fewest bytes in flight"] == 2);
  const std::string text = report.text();
  CHECK_THAT(text, Catch::Contains("4 ok, 0 failed") && Catch::Contains("p50 20.00 ms") &&
                       Catch::Contains("32.0 descriptors per operation") &&
                       Catch::Contains("decode-0: sysv/memory") &&
                       Catch::EndsWith("RESULT: PASS\n"));
}

TEST_CASE("the bytes each decode agent received and their fairness are reported", "[demo_report]") {
  DemoInputs in = cleanRun();
  in.decodes[0].stats["bytes"] = 3ull << 30;
  in.decodes[1].stats["bytes"] = 1ull << 30;
  const DemoReport report(std::move(in));
  // (3 + 1)^2 / (2 * (9 + 1)) = 0.8
  CHECK(report.json()["decodeFairness"] == Approx(0.8));
  CHECK_THAT(report.text(), Catch::Contains("decode-0 3.00 GiB, decode-1 1.00 GiB; Jain "
                                            "fairness 0.800 (1 = equal shares)"));
}

TEST_CASE("GPU pools: the report names the memory, the GPU runtime and each peer's path",
          "[demo_report]") {
  DemoInputs in = cleanRun();
  in.prefills[0].report["memory"] = {{"kind", "cuda"},
                                     {"device", 2},
                                     {"gpuPath", "staged"},
                                     {"gpuRuntime", "fake GPU runtime (a test double)"}};
  in.prefills[0].report["peers"][0]["dataPath"] = "GPU memory staged through host buffers";
  const DemoReport report(std::move(in));
  const std::string text = report.text();
  CHECK_THAT(text, Catch::Contains("CUDA device 2, GPU path staged; fake GPU runtime"));
  CHECK_THAT(text, Catch::Contains("decode-0: GPU memory staged through host buffers"));
  const json& j = report.json();
  CHECK(j["memory"]["gpuPath"] == "staged");
  REQUIRE(j["dataPaths"].size() == 1);
  CHECK(j["dataPaths"][0]["to"] == "decode-0");

  // Host pools: no memory line.
  CHECK_THAT(DemoReport(cleanRun()).text(), !Catch::Contains("GPU path"));
}

TEST_CASE("failed requests are grouped by reason and fail the run", "[demo_report]") {
  DemoInputs in = cleanRun();
  in.prefills[0].report["requests"].push_back(
      request("p-4", false, "", 0, "TIMED_OUT: p-4 not confirmed within 30000 ms"));
  in.prefills[0].report["requests"].push_back(
      request("p-5", false, "", 0, "TIMED_OUT: p-5 not confirmed within 31000 ms"));
  in.prefills[0].exitCode = 1;
  const DemoReport report(std::move(in));
  CHECK_FALSE(report.passed());
  CHECK(report.json()["requests"]["failureReasons"]["TIMED_OUT: <id> not confirmed within N ms"] ==
        2);
  CHECK_THAT(report.text(), Catch::Contains("2 x TIMED_OUT: <id> not confirmed within N ms") &&
                                Catch::EndsWith("RESULT: FAIL\n"));
}

TEST_CASE("corrupt blocks, blocks not returned and missing STATS fail the run", "[demo_report]") {
  SECTION("corrupt") {
    DemoInputs in = cleanRun();
    in.decodes[1].stats = decodeStats(3);
    const DemoReport report(std::move(in));
    CHECK_FALSE(report.passed());
    CHECK_THAT(report.text(), Catch::Contains("decode-1: 3 corrupt blocks"));
  }
  SECTION("a decode pool not free") {
    DemoInputs in = cleanRun();
    in.decodes[0].stats = decodeStats(0, 60);
    const DemoReport report(std::move(in));
    CHECK_FALSE(report.passed());
    CHECK_THAT(report.text(), Catch::Contains("decode-0: 60 of 64 blocks free at exit"));
  }
  SECTION("the prefill pool not free") {
    DemoInputs in = cleanRun();
    in.prefills[0].report["usageAtExit"]["freeBlocks"] = 100;
    const DemoReport report(std::move(in));
    CHECK_FALSE(report.passed());
    CHECK_THAT(report.text(), Catch::Contains("prefill-0 pool: 100 of 128 blocks free at exit"));
  }
  SECTION("no STATS") {
    DemoInputs in = cleanRun();
    in.decodes[0].stats = nullptr;
    in.decodes[0].exitCode = 137;
    const DemoReport report(std::move(in));
    CHECK_FALSE(report.passed());
    CHECK_THAT(report.text(), Catch::Contains("decode-0 printed no STATS (exit code 137)"));
  }
  SECTION("no report") {
    DemoInputs in = cleanRun();
    in.prefills[0].report = nullptr;
    const DemoReport report(std::move(in));
    CHECK_FALSE(report.passed());
    CHECK_THAT(report.text(), Catch::Contains("prefill-0 wrote no report"));
  }
}

namespace {

// Prefill TP2 -> decode TP4: each prefill rank sends every prompt to two decode ranks.
DemoInputs scatterRun(std::uint64_t prompts) {
  DemoInputs in;
  in.title = "tp run";
  in.prefillTp = 2;
  in.decodeTp = 4;
  for (std::uint32_t r = 0; r < 2; ++r) {
    json requests = json::array();
    for (std::uint64_t p = 0; p < prompts; ++p) {
      for (std::uint32_t q = 2 * r; q < 2 * r + 2; ++q) {
        const std::string prompt = "prompt-" + std::to_string(p);
        json one =
            request(prompt + "@d" + std::to_string(q), true, "decode-" + std::to_string(q), 10);
        one["destinationId"] = prompt;
        requests.push_back(std::move(one));
      }
    }
    in.prefills.push_back({"prefill-" + std::to_string(r),
                           {{"requests", std::move(requests)},
                            {"totals", {{"wallSeconds", 0.5}}},
                            {"usageAtExit", {{"totalBlocks", 64}, {"freeBlocks", 64}}}},
                           0});
  }
  for (std::uint32_t q = 0; q < 4; ++q) {
    json stats = decodeStats();
    stats["arrivals"] = prompts;
    stats["gathered"] = 0;
    in.decodes.push_back({"decode-" + std::to_string(q), "", stats, 0});
  }
  return in;
}

}  // namespace

TEST_CASE("a tensor-parallel run counts prompts, scatters and gathers", "[demo_report]") {
  SECTION("every decode rank got every prompt") {
    const DemoReport report(scatterRun(2));
    CHECK(report.passed());
    const json& tp = report.json()["tensorParallel"];
    CHECK(tp["prompts"] == 2);
    CHECK(tp["requests"] == 8);
    CHECK(tp["scatters"] == 4);
    CHECK(tp["gathers"] == 0);
    CHECK(tp["ranksVerified"] == 4);
    CHECK_THAT(report.text(),
               Catch::Contains("prefill TP2 -> decode TP4: 2 prompts in 8 requests; 4 scatters") &&
                   Catch::Contains("4 of 4 decode ranks received and verified"));
  }
  SECTION("a decode rank that missed a prompt fails the run") {
    DemoInputs in = scatterRun(2);
    in.decodes[3].stats["arrivals"] = 1;
    const DemoReport report(std::move(in));
    CHECK_FALSE(report.passed());
    CHECK_THAT(report.text(), Catch::Contains("decode-3: 1 arrivals"));
  }
  SECTION("gathers are the decode ranks' gathered arrivals") {
    DemoInputs in = scatterRun(2);
    in.decodes[0].stats["gathered"] = 2;
    CHECK(DemoReport(std::move(in)).json()["tensorParallel"]["gathers"] == 2);
  }
}
