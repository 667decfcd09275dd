// kvx-test-labels: unit serial
#include "workload/trace_reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

using namespace kvx;
using namespace kvx::workload;

namespace {

// The error a one-record-per-line trace gives; REQUIREs that it is INVALID_ARGUMENT.
std::string errorOf(std::string_view text) {
  auto result = parseTrace(text, "t.jsonl");
  REQUIRE_FALSE(result.isOk());
  CHECK(result.status().code() == StatusCode::kInvalidArgument);
  return result.status().message();
}

const char* const kGood =
    R"({"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1]})";

}  // namespace

TEST_CASE("a valid trace parses, skipping blank lines and unknown fields", "[trace]") {
  const std::string text = std::string(kGood) + "\n\n   \r\n" +
                           R"({"timestamp": 5.0, "input_length": 512, "output_length": 0,)" +
                           R"( "hash_ids": [7], "session": "abc"})" + "\r\n" +
                           R"({"hash_ids": [], "output_length": 3, "input_length": 1,)" +
                           R"( "timestamp": 5})";
  auto records = parseTrace(text, "t.jsonl");
  REQUIRE(records.isOk());
  REQUIRE(records->size() == 3);
  CHECK((*records)[0] == TraceRecord{0, 6758, 500, {0, 1}});
  CHECK((*records)[1] == TraceRecord{5, 512, 0, {7}});
  CHECK((*records)[2] == TraceRecord{5, 1, 3, {}});
}

TEST_CASE("an empty trace has no records", "[trace]") {
  auto records = parseTrace("\n\n", "t.jsonl");
  REQUIRE(records.isOk());
  CHECK(records->empty());
}

TEST_CASE("chunk counts round up", "[trace]") {
  CHECK(chunkCount(1) == 1);
  CHECK(chunkCount(512) == 1);
  CHECK(chunkCount(513) == 2);
  CHECK(chunkCount(6758) == 14);
}

TEST_CASE("malformed lines name the source, the line and the field", "[trace]") {
  const std::string good = std::string(kGood) + "\n\n";  // lines 1 and 2; the bad one is 3
  auto bad = [&](const std::string& line) { return errorOf(good + line + "\n" + kGood); };

  SECTION("bad JSON") {
    const std::string message = bad(R"({"timestamp": 0, "input_length": )");
    CHECK_THAT(message, Catch::StartsWith("t.jsonl:3: not valid JSON"));
  }
  SECTION("not an object") {
    CHECK_THAT(bad("[1, 2]"), Catch::StartsWith("t.jsonl:3: expected a JSON object, got [1,2]"));
  }
  SECTION("missing field") {
    CHECK(bad(R"({"timestamp": 0, "output_length": 1, "hash_ids": []})") ==
          "t.jsonl:3: missing field 'input_length'");
  }
  SECTION("wrong type") {
    CHECK(bad(R"({"timestamp": 0, "input_length": "12", "output_length": 1, "hash_ids": []})") ==
          "t.jsonl:3: 'input_length' must be an integer >= 1, got \"12\"");
    CHECK_THAT(bad(R"({"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": 4})"),
               Catch::Contains("t.jsonl:3: 'hash_ids' must be an array"));
    CHECK(bad(R"({"timestamp": 0, "input_length": 1, "output_length": 1.5, "hash_ids": []})") ==
          "t.jsonl:3: 'output_length' must be an integer >= 0, got 1.5");
    CHECK(bad(R"({"timestamp": true, "input_length": 1, "output_length": 1, "hash_ids": []})") ==
          "t.jsonl:3: 'timestamp' must be an integer >= 0, got true");
  }
  SECTION("negative values") {
    CHECK(bad(R"({"timestamp": -1, "input_length": 1, "output_length": 1, "hash_ids": []})") ==
          "t.jsonl:3: 'timestamp' must be an integer >= 0, got -1");
    CHECK(bad(R"({"timestamp": 0, "input_length": 1, "output_length": -3, "hash_ids": []})") ==
          "t.jsonl:3: 'output_length' must be an integer >= 0, got -3");
    CHECK(
        bad(R"({"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [1, -2]})") ==
        "t.jsonl:3: 'hash_ids[1]' must be an unsigned integer, got -2");
  }
  SECTION("zero input length") {
    CHECK(bad(R"({"timestamp": 0, "input_length": 0, "output_length": 1, "hash_ids": []})") ==
          "t.jsonl:3: 'input_length' must be an integer >= 1, got 0");
  }
  SECTION("fractional timestamp") {
    CHECK(bad(R"({"timestamp": 2.5, "input_length": 1, "output_length": 1, "hash_ids": []})") ==
          "t.jsonl:3: 'timestamp' must be an integer >= 0, got 2.5");
  }
  SECTION("too many hash ids") {
    CHECK(bad(R"({"timestamp": 0, "input_length": 513, "output_length": 1,)"
              R"( "hash_ids": [1, 2, 3]})") ==
          "t.jsonl:3: 'hash_ids' has 3 ids but input_length 513 has only 2 chunks of 512 tokens");
  }
}

TEST_CASE("decreasing timestamps are an error naming both lines", "[trace]") {
  const std::string text =
      R"({"timestamp": 10, "input_length": 1, "output_length": 1, "hash_ids": []})"
      "\n"
      R"({"timestamp": 10, "input_length": 1, "output_length": 1, "hash_ids": []})"
      "\n\n"
      R"({"timestamp": 9, "input_length": 1, "output_length": 1, "hash_ids": []})";
  CHECK(errorOf(text) ==
        "t.jsonl:4: timestamp 9 is earlier than 10 on line 2; timestamps must be non-decreasing "
        "(sort the trace)");
}

TEST_CASE("a missing file is NOT_FOUND with the path and the OS error", "[trace]") {
  auto records = readTraceFile("/nonexistent/kvx/trace.jsonl");
  REQUIRE_FALSE(records.isOk());
  CHECK(records.status().code() == StatusCode::kNotFound);
  CHECK_THAT(records.status().message(), Catch::Contains("/nonexistent/kvx/trace.jsonl") &&
                                             Catch::Contains("No such file or directory"));
}

TEST_CASE("deeply nested values are an error, not a stack overflow", "[trace]") {
  // 200,000 levels: showing such a value with dump() would recurse once per level.
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  CHECK(errorOf(deep) == "t.jsonl:1: expected a JSON object, got an array");
  CHECK(errorOf(R"({"timestamp": )" + deep + "}") ==
        "t.jsonl:1: 'timestamp' must be an integer >= 0, got an array");
  CHECK_THAT(
      errorOf(R"({"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": {"a": )" +
              deep + "}}"),
      Catch::EndsWith("got an object"));
}

TEST_CASE("a trace path that is a directory or a FIFO is refused at once", "[trace]") {
  auto directory = kvx::workload::readTraceFile("/tmp");
  REQUIRE_FALSE(directory.isOk());
  CHECK_THAT(directory.status().message(), Catch::Contains("'/tmp' is a directory"));
  // A FIFO held the agent in open() for ever (it ignores SIGTERM while it reads its trace).
  char dir[] = "/tmp/kvx-trace-fifo-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string fifo = std::string(dir) + "/trace.jsonl";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto piped = kvx::workload::readTraceFile(fifo);
  ::unlink(fifo.c_str());
  ::rmdir(dir);
  REQUIRE_FALSE(piped.isOk());
  CHECK(piped.status().code() == kvx::StatusCode::kInvalidArgument);
  CHECK_THAT(piped.status().message(), Catch::Contains("is a FIFO, not a regular file"));
}
