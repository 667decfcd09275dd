// kvx-test-labels: unit serial
#include "demo/demo_plan.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "tests/support/temp_file.h"

using namespace kvx;
using namespace kvx::demo;

namespace {

// The value after `option` in `args`, or "" when it is not there.
std::string valueOf(const std::vector<std::string>& args, const std::string& option) {
  auto it = std::find(args.begin(), args.end(), option);
  return it == args.end() || it + 1 == args.end() ? "" : *(it + 1);
}

bool has(const std::vector<std::string>& args, const std::string& option) {
  return std::find(args.begin(), args.end(), option) != args.end();
}

}  // namespace

TEST_CASE("without TP the demo runs two decode agents and one prefill agent", "[demo_plan]") {
  auto plan = planDemo(DemoOptions{});
  REQUIRE(plan.isOk());
  CHECK_FALSE(plan->tensorParallel());
  REQUIRE(plan->decodes.size() == 2);
  REQUIRE(plan->prefills.size() == 1);
  CHECK(plan->decodeBlocks == 1024);
  CHECK(plan->prefillBlocks == 1024);
  CHECK(plan->decodes[1].name == "decode-1");
  CHECK(has(plan->decodes[0].args, "--verify"));
  CHECK_FALSE(has(plan->decodes[0].args, "--tp-size"));
  CHECK_FALSE(has(plan->prefills[0].args, "--decode-tp"));
  CHECK(valueOf(plan->prefills[0].args, "--blocks") == "1024");
  CHECK(plan->rate == 100);
}

TEST_CASE("gathers replay at a rate the data path keeps up with, unless told", "[demo_plan]") {
  DemoOptions options;
  options.prefillTp = 4;
  options.decodeTp = 2;
  CHECK(planDemo(options)->rate == 5);
  options.rate = 50;
  auto told = planDemo(options);
  CHECK(told->rate == 50);
  CHECK(std::stod(valueOf(told->prefills[0].args, "--rate")) == 50);
  options.prefillTp = 2;
  options.decodeTp = 4;
  options.rate = -1;
  CHECK(planDemo(options)->rate == 100);
}

TEST_CASE("with TP every rank is an agent with its rank", "[demo_plan]") {
  DemoOptions options;
  options.prefillTp = 2;
  options.decodeTp = 4;
  options.requests = 7;
  auto plan = planDemo(options);
  REQUIRE(plan.isOk());
  CHECK(plan->tensorParallel());
  REQUIRE(plan->decodes.size() == 4);
  REQUIRE(plan->prefills.size() == 2);
  for (std::size_t q = 0; q < 4; ++q) {
    const auto& args = plan->decodes[q].args;
    CHECK(valueOf(args, "--tp-size") == "4");
    CHECK(valueOf(args, "--tp-rank") == std::to_string(q));
    CHECK(valueOf(args, "--blocks") == "2048");
  }
  for (std::size_t r = 0; r < 2; ++r) {
    const auto& args = plan->prefills[r].args;
    CHECK(plan->prefills[r].name == "prefill-" + std::to_string(r));
    CHECK(valueOf(args, "--tp-size") == "2");
    CHECK(valueOf(args, "--tp-rank") == std::to_string(r));
    CHECK(valueOf(args, "--decode-tp") == "4");
    CHECK(valueOf(args, "--seed") == "1");  // every rank replays the same prompts
    CHECK(valueOf(args, "--requests") == "7");
    // Two requests per prompt, each with its own source blocks.
    CHECK(valueOf(args, "--blocks") == "2048");
  }
  CHECK_THAT(plan->title, Catch::Contains("prefill TP2 -> decode TP4"));
}

TEST_CASE("explicit pool sizes win, and TP sizes must split the model's heads", "[demo_plan]") {
  DemoOptions options;
  options.prefillTp = 4;
  options.decodeTp = 2;
  options.decodeBlocks = 100;
  options.prefillBlocks = 50;
  auto plan = planDemo(options);
  REQUIRE(plan.isOk());
  CHECK(valueOf(plan->decodes[0].args, "--blocks") == "100");
  CHECK(valueOf(plan->prefills[3].args, "--blocks") == "50");

  options.decodeTp = 3;
  auto refused = planDemo(options);
  REQUIRE_FALSE(refused.isOk());
  CHECK_THAT(refused.status().message(), Catch::Contains("--decode-tp 3 does not divide"));
  options.decodeTp = 2;
  options.model = "deepseek-v3";
  CHECK_FALSE(planDemo(options).isOk());
}

TEST_CASE("GPU pools: every agent gets the memory, device and GPU path", "[demo_plan]") {
  DemoOptions o;
  o.memory = "cuda";
  o.device = 3;
  o.gpuPath = "staged";
  auto plan = planDemo(o);
  REQUIRE(plan.isOk());
  for (const auto* agents : {&plan->decodes, &plan->prefills}) {
    for (const DemoAgent& agent : *agents) {
      CHECK(valueOf(agent.args, "--memory") == "cuda");
      CHECK(valueOf(agent.args, "--device") == "3");
      CHECK(valueOf(agent.args, "--gpu-path") == "staged");
    }
  }
  CHECK_THAT(plan->title, Catch::Contains("CUDA device 3 memory (GPU path staged)"));

  // Host pools (the default) take no device or GPU path, and say nothing of them.
  auto host = planDemo(DemoOptions{});
  REQUIRE(host.isOk());
  CHECK(valueOf(host->prefills[0].args, "--memory") == "host");
  CHECK_FALSE(has(host->prefills[0].args, "--gpu-path"));
  CHECK_THAT(host->title, !Catch::Contains("CUDA"));

  DemoOptions wrong;
  wrong.device = 1;  // without --memory cuda
  auto refused = planDemo(wrong);
  CHECK(refused.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(refused.status().message(), Catch::Contains("--device"));
}

TEST_CASE("a demo of no request is refused (the agents would read 0 as no limit)", "[demo_plan]") {
  DemoOptions o;
  o.requests = 0;
  auto plan = planDemo(o);
  REQUIRE_FALSE(plan.isOk());
  CHECK(plan.status().code() == kvx::StatusCode::kInvalidArgument);
  CHECK_THAT(plan.status().message(), Catch::Contains("--requests must be at least 1"));
}

TEST_CASE("with a trace, the pools hold its largest replayed prompt, or the demo refuses at once",
          "[demo_plan]") {
  // 17,000 tokens are 1,063 blocks of 16: more than the default pools of 1,024.
  kvx::test::TempFile trace(
      "{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 1, \"hash_ids\": []}\n"
      "{\"timestamp\": 10, \"input_length\": 17000, \"output_length\": 1, \"hash_ids\": []}\n"
      "{\"timestamp\": 20, \"input_length\": 90000, \"output_length\": 1, \"hash_ids\": []}\n");
  DemoOptions o;
  o.trace = trace.path();
  o.requests = 2;  // the 90,000-token prompt is not replayed
  auto plan = planDemo(o);
  INFO(plan.status().toString());
  REQUIRE(plan.isOk());
  CHECK(plan->prefillBlocks == 1063);
  CHECK(plan->decodeBlocks == 1063);
  CHECK(valueOf(plan->decodes[0].args, "--blocks") == "1063");

  o.decodeBlocks = 1024;  // the user's size: kept, and refused for this trace
  auto refused = planDemo(o);
  REQUIRE_FALSE(refused.isOk());
  CHECK(refused.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(refused.status().message(),
             Catch::Contains("the largest prompt of the first 2 in the trace (line 2, 17000 "
                             "tokens) needs 1063 blocks in each decode pool, which has 1024: "
                             "raise --decode-blocks"));
}
