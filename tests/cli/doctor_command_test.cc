// kvx-test-labels: unit
// `kvx doctor` as an operator runs it: the text report, --json, --strict and the exit codes.
// The binary is $KVX_CLI, or cli/kvx next to this test's build directory.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "process/child_process.h"
#include "tests/support/kvx_child.h"

using kvx::process::ChildProcess;
using kvx::test::spawnKvx;
using std::chrono::seconds;

namespace {

std::string fixture(const char* name) {
  return (std::filesystem::path(__FILE__).parent_path().parent_path() / "fixtures" / "doctor" /
          name)
      .string();
}

struct Run {
  std::string output;
  int exitCode = -1;
};

Run doctor(std::vector<std::string> args) {
  args.insert(args.begin(), "doctor");
  ChildProcess child = spawnKvx(args);
  Run run;
  while (true) {
    auto line = child.readLine(seconds(30));
    if (!line.isOk()) break;
    run.output += *line + "\n";
  }
  run.exitCode = child.waitExit(seconds(30));
  return run;
}

}  // namespace

TEST_CASE("kvx doctor prints the text report and exits 0 whatever it finds", "[doctor]") {
  const Run dgx = doctor({"--root", fixture("dgx-h100")});
  CHECK(dgx.exitCode == 0);
  CHECK_THAT(dgx.output, Catch::Contains("Verdict: GPUDirect RDMA usable for 8 of 64"));
  const Run broken = doctor({"--root", fixture("ucx-no-cuda")});
  CHECK(broken.exitCode == 0);
  CHECK_THAT(broken.output, Catch::Contains("[FAIL] UCX: UCX 1.13.1 cannot move CUDA memory"));
}

TEST_CASE("kvx doctor --strict exits 1 when no pair can use GPUDirect RDMA", "[doctor]") {
  CHECK(doctor({"--strict", "--root", fixture("dgx-h100")}).exitCode == 0);
  CHECK(doctor({"--strict", "--root", fixture("bar1-small")}).exitCode == 1);
  CHECK(doctor({"--strict", "--root", fixture("bar1-small"), "--pool-bytes", "128M"}).exitCode ==
        0);
  CHECK(doctor({"--strict", "--root", fixture("bare")}).exitCode == 1);
}

TEST_CASE("kvx doctor --json - writes JSON alone; --json FILE writes it beside the text",
          "[doctor]") {
  const Run stdoutJson = doctor({"--root", fixture("no-rdma"), "--json", "-"});
  CHECK(stdoutJson.exitCode == 0);
  const auto json = nlohmann::json::parse(stdoutJson.output);
  CHECK(json["verdict"]["summary"] == "no RDMA device");

  const auto file = std::filesystem::temp_directory_path() /
                    ("kvx-doctor-" + std::to_string(::getpid()) + ".json");
  const Run both = doctor({"--root", fixture("memlock-low"), "--json", file.string()});
  CHECK(both.exitCode == 0);
  CHECK_THAT(both.output, Catch::StartsWith("kvx doctor: GPUDirect RDMA on "));
  std::ifstream in(file);
  const auto written = nlohmann::json::parse(in);
  CHECK(written["checks"][8]["state"] == "failed");
  std::filesystem::remove(file);
}

TEST_CASE("kvx doctor: usage errors exit 2", "[doctor]") {
  CHECK(doctor({"--root", fixture("no-such-case")}).exitCode == 2);
  CHECK(doctor({"--no-such-option"}).exitCode == 2);
  CHECK(doctor({"--root", fixture("bare"), "--pool-bytes", "0"}).exitCode == 2);
  CHECK(doctor({"--root", fixture("bare"), "--json", "/no/such/dir/report.json"}).exitCode == 2);
}
