// kvx-test-labels: unit
#include "cli/demo_report.h"

#include <catch2/catch.hpp>

using namespace kvx::cli;
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
  in.prefill = {{"requests",
                 {request("p-0", true, "decode-0", 10), request("p-1", true, "decode-1", 20),
                  request("p-2", true, "decode-0", 30), request("p-3", true, "decode-1", 40)}},
                {"totals", {{"wallSeconds", 0.5}}},
                {"peers", {{{"name", "decode-0"}, {"dataPath", "sysv/memory"}}}},
                {"usageAtExit", {{"totalBlocks", 128}, {"freeBlocks", 128}}}};
  in.prefillExitCode = 0;
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

TEST_CASE("failed requests are grouped by reason and fail the run", "[demo_report]") {
  DemoInputs in = cleanRun();
  in.prefill["requests"].push_back(
      request("p-4", false, "", 0, "TIMED_OUT: p-4 not confirmed within 30000 ms"));
  in.prefill["requests"].push_back(
      request("p-5", false, "", 0, "TIMED_OUT: p-5 not confirmed within 31000 ms"));
  in.prefillExitCode = 1;
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
    in.prefill["usageAtExit"]["freeBlocks"] = 100;
    CHECK_FALSE(DemoReport(std::move(in)).passed());
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
    in.prefill = nullptr;
    CHECK_FALSE(DemoReport(std::move(in)).passed());
  }
}
