// kvx-test-labels: unit serial
#include "workload/trace_writer.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "workload/trace_reader.h"

using namespace kvx;
using namespace kvx::workload;

namespace {

const std::vector<TraceRecord> kRecords = {
    {0, 6758, 500, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}},
    {0, 1, 0, {}},
    {1500, 1024, 7, {0, 18'446'744'073'709'551'615ull}},
};

std::filesystem::path tempPath(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("kvx_trace_writer_" + std::to_string(::getpid()) + "_" + name);
}

}  // namespace

TEST_CASE("a record is written as one Mooncake-style JSON line", "[trace]") {
  CHECK(toJsonLine({12, 1025, 3, {4, 5, 6}}) ==
        R"({"timestamp": 12, "input_length": 1025, "output_length": 3, "hash_ids": [4, 5, 6]})");
  CHECK(toJsonLine({0, 1, 0, {}}) ==
        R"({"timestamp": 0, "input_length": 1, "output_length": 0, "hash_ids": []})");
}

TEST_CASE("written lines read back equal", "[trace]") {
  std::string text;
  for (const TraceRecord& r : kRecords) text += toJsonLine(r) + "\n";
  auto back = parseTrace(text, "memory");
  REQUIRE(back.isOk());
  CHECK(*back == kRecords);
}

TEST_CASE("a written file reads back equal", "[trace]") {
  const auto path = tempPath("round_trip.jsonl");
  REQUIRE(writeTraceFile(path.string(), kRecords).isOk());
  auto back = readTraceFile(path.string());
  std::filesystem::remove(path);
  REQUIRE(back.isOk());
  CHECK(*back == kRecords);
}

TEST_CASE("writing where no file can be created fails with the path", "[trace]") {
  const Status status = writeTraceFile("/nonexistent/kvx/out.jsonl", kRecords);
  REQUIRE_FALSE(status.isOk());
  CHECK(status.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(status.message(), Catch::Contains("/nonexistent/kvx/out.jsonl"));
}
