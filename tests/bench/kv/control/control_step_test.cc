// kvx-test-labels: unit serial
#include "bench/kv/control/control_step.h"

#include <catch2/catch.hpp>
#include <set>

using namespace kvx::bench;

TEST_CASE("control steps: every WORKLOADS.md concern, each under its group", "[bench][control]") {
  const auto steps = controlStepNames();
  std::set<std::string> groups;
  for (const std::string& step : steps) groups.insert(controlStepGroup(step));
  CHECK(groups == std::set<std::string>{"registration", "metadata", "handshake", "descriptors",
                                        "fixed overhead", "abort", "peer death"});
  CHECK(controlStepGroup("fixed-overhead") == "fixed overhead");
  CHECK(controlStepGroup("abort-kv") == "abort");
  CHECK(controlStepGroup("peer-death") == "peer death");
  CHECK(steps.back() == "peer-death");  // the one with a process to kill runs last
}

TEST_CASE("an unknown control step is refused with the list of steps", "[bench][control]") {
  auto figures = runControlStep("handshakes", "shm", ControlOptions{});
  REQUIRE_FALSE(figures.isOk());
  CHECK(figures.status().code() == kvx::StatusCode::kNotFound);
  CHECK_THAT(figures.status().message(), Catch::Contains("peer-death"));
}
