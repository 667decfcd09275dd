// kvx-test-labels: multiprocess
// A prefill agent replaying a trace admits prompts into its pool first come first served: a
// small prompt that would fit the room left does not take it ahead of an earlier, larger
// prompt that waits for room (daemon/prefill_driver.h).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "process/child_process.h"
#include "tests/support/kvx_binary.h"
#include "tests/support/kvx_child.h"
#include "tests/support/listening_line.h"
#include "workload/trace_writer.h"

using kvx::process::ChildProcess;
using kvx::test::kvxBinary;
using kvx::test::spawnKvx;
using std::chrono::seconds;

TEST_CASE("a small prompt does not take the prefill pool's room ahead of an earlier large one",
          "[multiprocess]") {
  const std::string dir = "/tmp/kvx_admission_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  // A 128-block pool of 16-token blocks. Prompt 0 (100 blocks) holds it for 32 layers x 10 ms
  // of simulated compute; prompt 1 (100 blocks) arrives 20 ms later and must wait for it;
  // prompt 2 (20 blocks) arrives at 40 ms and would fit beside prompt 0 at once.
  const std::vector<kvx::workload::TraceRecord> trace{
      {.timestampMs = 0, .inputLength = 1600, .outputLength = 1},
      {.timestampMs = 20, .inputLength = 1600, .outputLength = 1},
      {.timestampMs = 40, .inputLength = 320, .outputLength = 1}};
  REQUIRE(kvx::workload::writeTraceFile(dir + "/trace.jsonl", trace).isOk());
  ChildProcess decode = spawnKvx({"agent", "--role", "decode", "--name", "d-admission", "--blocks",
                                  "512", "--log-level", "warn"});
  const std::string address = kvx::test::readListeningAddress(decode);
  ChildProcess prefill =
      spawnKvx({"agent", "--role", "prefill", "--name", "p-admission", "--blocks", "128", "--peer",
                address, "--trace", dir + "/trace.jsonl", "--layer-ms", "10", "--no-fill",
                "--log-level", "warn", "--report", dir + "/prefill.json"});
  CHECK(prefill.waitExit(seconds(120)) == 0);
  ::kill(decode.pid(), SIGTERM);
  CHECK(decode.waitExit(seconds(30)) == 0);

  std::ifstream file(dir + "/prefill.json");
  REQUIRE(file.good());
  const auto report = nlohmann::json::parse(file);
  std::filesystem::remove_all(dir);
  const auto& requests = report["requests"];
  REQUIRE(requests.size() == 3);
  for (const auto& r : requests) CHECK(r["released"] == true);
  // Prompt 1 waited for prompt 0's blocks (its compute alone is 320 ms) ...
  CHECK(requests[1]["waitedForBlocksMs"].get<double>() > 100);
  // ... and prompt 2, which arrived after it, was not admitted before it, though it fits
  // beside prompt 0 at once. The order is the driver's own count, not a time: admitted in
  // order, both get their blocks when prompt 0 returns its own, and their clock readings
  // then differ by however late each worker thread ran (6 ms the wrong way once under TSan).
  CHECK(requests[0]["admission"] == 1);
  CHECK(requests[1]["admission"] == 2);
  CHECK(requests[2]["admission"] == 3);
  CHECK(requests[2]["waitedForBlocksMs"].get<double>() > 100);
}
