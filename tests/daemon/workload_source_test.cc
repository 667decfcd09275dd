// kvx-test-labels: unit serial
#include "daemon/workload_source.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

using namespace kvx;
using namespace kvx::daemon;

TEST_CASE("a prompt longer than the clip is cut, with its prefix hashes", "[cli]") {
  workload::TraceRecord r{0, 2000, 10, {1, 2, 3, 4}};
  clipPrompt(r, 1100);
  CHECK(r.inputLength == 1100);
  CHECK(r.hashIds == std::vector<std::uint64_t>{1, 2, 3});  // 3 chunks of 512 tokens cover 1100
  workload::TraceRecord shorter{0, 700, 10, {5, 6}};
  clipPrompt(shorter, 1100);
  CHECK(shorter.inputLength == 700);
  CHECK(shorter.hashIds == std::vector<std::uint64_t>{5, 6});
}

TEST_CASE("a replayed trace keeps its first N requests and clips their prompts", "[cli]") {
  const auto path = std::filesystem::temp_directory_path() / "kvx-workload-source-test.jsonl";
  {
    std::ofstream out(path);
    out << R"({"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1, 2]})"
        << "\n"
        << R"({"timestamp": 5, "input_length": 5000, "output_length": 1, "hash_ids": [3, 4, 5, 6, 7, 8, 9, 10, 11, 12]})"
        << "\n"
        << R"({"timestamp": 9, "input_length": 9000, "output_length": 1, "hash_ids": [13]})"
        << "\n";
  }
  WorkloadConfig config;
  config.trace = path.string();
  config.requests = 2;
  config.clipTokens = 1024;
  auto records = loadWorkload(config);
  std::filesystem::remove(path);
  REQUIRE(records.isOk());
  REQUIRE(records->size() == 2);
  CHECK((*records)[0].inputLength == 600);
  CHECK((*records)[1].inputLength == 1024);
  CHECK((*records)[1].hashIds == std::vector<std::uint64_t>{3, 4});
}
