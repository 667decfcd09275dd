// kvx-test-labels: multiprocess bench-smoke
// `kvx bench --quick` runs every scenario (a tiny trace for `trace`) end to end with real
// agent processes and the bare UCP loop, and its JSON says that every case ran, every
// request was released and every block verified; the `control` scenario's section is
// printed and none of its figures failed. Speed is not checked: only that the
// figures are produced and the data is right. Under a sanitizer (about 4 minutes for all of
// them there) it runs incast, mla, trace and control: many-to-one, one latent segment per
// layer, the trace reader and the control plane (tests/support/sanitizer_build.h).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/support/kvx_run.h"
#include "tests/support/sanitizer_build.h"

using std::chrono::seconds;

namespace {

const std::set<std::string> kAllScenarios{"hetero-tp",    "incast",      "layerwise",
                                          "llama70b-tp8", "llama8b",     "long-context",
                                          "mla",          "token-pages", "trace"};
const std::set<std::string> kSanitizerScenarios{"incast", "mla", "trace"};

// kSanitizerScenarios and control, as --scenario takes them.
std::string sanitizerScenarioList() {
  std::string list;
  for (const std::string& name : kSanitizerScenarios) list += name + ",";
  return list + "control";
}

}  // namespace

TEST_CASE("each scenario runs, verifies and reports in quick mode (a subset under a sanitizer)",
          "[bench]") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("kvx-bench-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string trace = (dir / "trace.jsonl").string();
  {
    std::ofstream file(trace);
    // Prompts of two 512-token chunks (hash ids), the first shared by every other prompt:
    // 600-1300 tokens, or 520-590 under a sanitizer, where moving and checking their bytes
    // was most of the case (the same chunks, the same replay).
    const int step = kvx::test::smallWorkloads() ? 10 : 100;
    const int shortest = kvx::test::smallWorkloads() ? 520 : 600;
    for (int i = 0; i < 8; ++i) {
      file << R"({"timestamp": )" << i * 20 << R"(, "input_length": )" << shortest + step * i
           << R"(, "output_length": 10, "hash_ids": [)" << (i % 2) << ", " << 100 + i << "]}\n";
    }
  }
  const std::string json = (dir / "bench.json").string();
  const std::string csv = (dir / "bench.csv").string();
  auto [code, output] = kvx::test::runKvx(
      {"bench", "--scenario", kvx::test::smallWorkloads() ? sanitizerScenarioList() : "all",
       "--quick", "--trace", trace, "--json", json, "--csv", csv, "--log-level", "error"},
      seconds(900));
  INFO(output);
  CHECK(code == 0);
  CHECK_THAT(output, Catch::Contains("Every destination block was verified"));
  CHECK_THAT(output, Catch::Contains("UCX settings for shm"));
  std::ifstream file(json);
  const auto report = nlohmann::json::parse(file);
  std::set<std::string> scenarios;
  for (const auto& c : report["cases"]) {
    INFO(c.dump());
    scenarios.insert(c["scenario"].get<std::string>());
    CHECK(c["clean"] == true);
    REQUIRE(c.contains("kvx"));
    CHECK(c["kvx"]["failed"] == 0);
    CHECK(c["kvx"]["corruptBlocks"] == 0);
    CHECK(c["kvx"]["verifiedBlocks"].get<std::uint64_t>() > 0);
    CHECK(c["kvx"]["gbps"].get<double>() > 0);
    if (c.contains("bare")) {
      CHECK(c["bare"]["verify"]["ok"] == true);
      CHECK(c["ratio"].get<double>() > 0);
    }
  }
  CHECK(scenarios == (kvx::test::smallWorkloads() ? kSanitizerScenarios : kAllScenarios));
  std::ifstream csvFile(csv);
  std::string header;
  std::getline(csvFile, header);
  CHECK_THAT(header, Catch::StartsWith("scenario,case,transport"));

  CHECK_THAT(output, Catch::Contains("== control =="));
  REQUIRE(report.contains("control"));
  std::set<std::string> groups;
  for (const auto& f : report["control"]["figures"]) {
    INFO(f.dump());
    groups.insert(f["group"].get<std::string>());
    CHECK(f["failed"] == false);
    // Abort and peer death depend on timing (a request may end before the cancel or the
    // kill reaches it); then the figure says why instead of a value.
    const bool timingBound = f["group"] == "abort" || f["group"] == "peer death";
    CHECK((!f["value"].is_null() || (timingBound && !f["why"].get<std::string>().empty())));
  }
  CHECK(groups == std::set<std::string>{"registration", "metadata", "handshake", "descriptors",
                                        "fixed overhead", "abort", "peer death"});
  std::ifstream controlCsv((dir / "bench-control.csv").string());
  std::getline(controlCsv, header);
  CHECK_THAT(header, Catch::StartsWith("scenario,group,figure"));
  std::filesystem::remove_all(dir);
}
