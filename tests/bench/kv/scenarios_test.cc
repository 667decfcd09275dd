// kvx-test-labels: unit serial
#include "bench/kv/scenarios.h"

#include <catch2/catch.hpp>
#include <set>

#include "bench/kv/bare_match.h"
#include "bench/kv/case_runner.h"
#include "bench/kv/sweep.h"

using namespace kvx;
using namespace kvx::bench;

TEST_CASE("every scenario of WORKLOADS.md expands into labelled cases", "[bench]") {
  const std::vector<std::string> expected = {"hetero-tp",    "incast",      "layerwise",
                                             "llama70b-tp8", "llama8b",     "long-context",
                                             "mla",          "token-pages", "trace"};
  CHECK(scenarioNames() == expected);
  ScenarioOptions options;
  options.trace = "trace.jsonl";
  for (ScenarioSize size : {ScenarioSize::kQuick, ScenarioSize::kDefault, ScenarioSize::kFull}) {
    options.size = size;
    for (const std::string& name : scenarioNames()) {
      INFO(name);
      auto cases = scenarioCases(name, options);
      REQUIRE(cases.isOk());
      CHECK_FALSE(cases->empty());
      std::set<std::string> labels;
      for (const BenchCase& c : *cases) {
        CHECK(c.scenario == name);
        CHECK(labels.insert(c.label).second);
        CHECK(c.requests >= c.window);
        CHECK(c.tokens > 0);
      }
    }
  }
}

TEST_CASE("scenario options shape the cases", "[bench]") {
  ScenarioOptions options;
  options.transports = {"shm", "tcp"};
  auto both = scenarioCases("llama70b-tp8", options);
  REQUIRE(both.isOk());
  std::set<std::string> transports;
  for (const BenchCase& c : *both) transports.insert(c.transport);
  CHECK(transports == std::set<std::string>{"shm", "tcp"});
  // Big prompts get fewer requests in flight, to fit the pool budget.
  options.transports = {"shm"};
  options.size = ScenarioSize::kFull;
  options.poolBudgetMiB = 4096;
  auto full = scenarioCases("llama8b", options);
  REQUIRE(full.isOk());
  for (const BenchCase& c : *full) {
    CHECK((c.window + 1) * c.tokens * 128 * 1024 <=
          std::max<std::uint64_t>(4096ull << 20, 2 * c.tokens * 128 * 1024));
  }
  CHECK(scenarioCases("nope", options).status().code() == StatusCode::kNotFound);
  options.trace.clear();
  CHECK_THAT(scenarioCases("trace", options).status().message(), Catch::Contains("--trace FILE"));
}

TEST_CASE("the bare loop matches the size kvx put on the wire", "[bench]") {
  BenchCase c;
  c.mode = "pull";
  c.window = 8;
  c.blockOrder = "random";
  CaseMetrics kvx;
  kvx.released = 10;
  kvx.bytes = 10 * 512 * 1024;
  kvx.operationsPerRequest = 16;  // 32 KiB per operation
  BareUcpOptions bare = matchingBare(c, kvx, 32768);
  CHECK(bare.op == BareOp::kGet);
  CHECK(bare.segmentBytes == 32768);
  CHECK(bare.segments == 16);
  CHECK(bare.window == 8);
  CHECK(bare.pattern == SlotPattern::kRandom);
  CHECK(bare.alloc == BufferAlloc::kUcx);
  CHECK(bare.notify);
  CHECK(bare.requests >= 16);
  CHECK(validate(bare).isOk());
  kvx.operationsPerRequest = 1;  // everything coalesced into one operation
  bare = matchingBare(c, kvx, 32768);
  CHECK(bare.segmentBytes == 512 * 1024);
  CHECK(bare.segments == 1);
  // A measured run's buffer is at least 256 MiB; a smoke run's holds two windows of requests.
  CHECK(bare.bufferBytes == 256ull << 20);
  c.smoke = true;
  bare = matchingBare(c, kvx, 32768);
  CHECK(bare.bufferBytes == 2 * 8 * 512 * 1024);
  CHECK(validate(bare).isOk());
}

TEST_CASE("quick scenarios are smoke runs, the others are measured", "[bench]") {
  ScenarioOptions options;
  options.size = ScenarioSize::kQuick;
  auto quick = scenarioCases("llama8b", options);
  REQUIRE(quick.isOk());
  REQUIRE_FALSE(quick->empty());
  for (const BenchCase& c : *quick) CHECK(c.smoke);
  options.size = ScenarioSize::kDefault;
  auto standard = scenarioCases("llama8b", options);
  REQUIRE(standard.isOk());
  for (const BenchCase& c : *standard) CHECK_FALSE(c.smoke);
}

TEST_CASE("a sweep crosses its lists", "[bench]") {
  SweepOptions sweep;
  sweep.segmentBytes = {4096, 65536};
  sweep.segments = {8};
  sweep.windows = {1, 4};
  sweep.modes = {"push"};
  auto cases = sweepCases(sweep);
  REQUIRE(cases.isOk());
  CHECK(cases->size() == 4);
  CHECK((*cases)[0].tokens == 8 * 16);
  CHECK((*cases)[0].requests == 2000);  // 1 GiB of 32 KiB requests, capped

  sweep.requests = 20000;  // an explicit count is taken as it is
  cases = sweepCases(sweep);
  REQUIRE(cases.isOk());
  for (const auto& c : *cases) CHECK(c.requests == 20000);
  sweep.requests = kMaxSweepRequests + 1;
  CHECK(sweepCases(sweep).status().code() == StatusCode::kInvalidArgument);
  sweep.requests = 0;

  sweep.segmentBytes = {100};
  CHECK(sweepCases(sweep).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("case pools hold the requests in flight, within the budget, never below one request",
          "[bench]") {
  const kv::ModelShape llama = *kv::shapeFromNameOrJson("llama3-8b");
  // 4k tokens = 256 blocks of 2 MiB; 8 in flight + 1 + 16 slack.
  CHECK(CaseRunner::poolBlocks(llama, 4096, 8, 0) == 256 * 9 + 16);
  // A 1 GiB budget holds 512 blocks.
  CHECK(CaseRunner::poolBlocks(llama, 4096, 8, 1ull << 30) == 512);
  // One 16k-token request (1024 blocks) does not fit 1 GiB: the pool holds it anyway.
  CHECK(CaseRunner::poolBlocks(llama, 16384, 2, 1ull << 30) == 1024 + 16);
}

TEST_CASE("trace replays leave their pools unpopulated; other cases populate within budget",
          "[bench]") {
  ScenarioOptions options;
  options.trace = "trace.jsonl";
  options.poolBudgetMiB = 1024;
  options.size = ScenarioSize::kQuick;
  for (const std::string name : {"trace", "llama8b"}) {
    auto cases = scenarioCases(name, options);
    REQUIRE(cases.isOk());
    for (const BenchCase& c : *cases) {
      CHECK(c.populate == (name != "trace"));
      CHECK(c.poolBudgetBytes == (1ull << 30));
    }
  }
}
