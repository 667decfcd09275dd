// kvx-test-labels: unit serial
// The control scenario's table, JSON and CSV: every figure appears once in each, figures
// without a value say why (and whether kvx failed), and targets say whether they are met.
#include "bench/kv/control/control_output.h"

#include <catch2/catch.hpp>
#include <sstream>

using namespace kvx::bench;

namespace {

ControlReport sampleReport() {
  ControlReport report;
  report.figures.push_back(measuredFigure("registration", "allocateMemory 1 GiB, populate on",
                                          "shm", 612.345, "ms", 1, "1.63 GiB/s"));
  report.figures.push_back(
      measuredFigure("metadata", "metadata blob, 32 regions", "tcp", 5123, "bytes"));
  ControlFigure cpu = measuredFigure("descriptors", "makeTransfer + post, 16384 x 64 B", "shm",
                                     85.25, "ns/desc", 5, "makeTransfer 40 + post 45 ns/desc");
  cpu.target = "<= 100 ns/desc";
  cpu.met = true;
  report.figures.push_back(cpu);
  report.figures.push_back(unmeasuredFigure("registration", "allocateMemory 4 GiB, populate on",
                                            "shm", "needs 4.00 GiB, only 2.10 GiB available"));
  report.figures.push_back(failedFigure("peer death", "SIGKILL -> FAILED", "tcp",
                                        "TIMED_OUT: 2 requests, had not ended"));
  report.notes = {"Agents run in this process."};
  return report;
}

}  // namespace

TEST_CASE("bytesLabel and formatValue print sizes and values compactly", "[bench][control]") {
  CHECK(bytesLabel(64) == "64 B");
  CHECK(bytesLabel(4096) == "4 KiB");
  CHECK(bytesLabel(64ull << 20) == "64 MiB");
  CHECK(bytesLabel(4ull << 30) == "4 GiB");
  CHECK(bytesLabel(3ull << 29) == "1.5 GiB");
  CHECK(formatValue(5123, "bytes") == "5123");
  CHECK(formatValue(612.345, "ms") == "612");
  CHECK(formatValue(85.25, "ns/desc") == "85.2");
  CHECK(formatValue(1.234, "ms") == "1.23");
  CHECK(formatValue(0.01234, "ms") == "0.0123");
  CHECK(formatValue(0, "ms") == "0");
}

TEST_CASE("the control table lists every figure, grouped, with why for the missing ones",
          "[bench][control]") {
  const std::string table = renderControlTable(sampleReport());
  CHECK_THAT(table, Catch::Contains("== control =="));
  CHECK_THAT(table, Catch::Contains("registration:"));
  CHECK_THAT(table, Catch::Contains("allocateMemory 1 GiB, populate on"));
  CHECK_THAT(table, Catch::Contains("612"));
  CHECK_THAT(table, Catch::Contains("target <= 100 ns/desc: met"));
  CHECK_THAT(table, Catch::Contains("n=5"));
  CHECK_THAT(table, Catch::Contains("not measured: needs 4.00 GiB"));
  CHECK_THAT(table, Catch::Contains("FAILED: TIMED_OUT"));
  CHECK_THAT(table, Catch::Contains("Agents run in this process."));
  // Two registration figures are not adjacent: the group header appears again.
  std::size_t headers = 0;
  for (std::size_t at = table.find("registration:"); at != std::string::npos;
       at = table.find("registration:", at + 1)) {
    ++headers;
  }
  CHECK(headers == 2);
}

TEST_CASE("the control JSON carries every figure, null where there is no value",
          "[bench][control]") {
  const ControlReport report = sampleReport();
  CHECK_FALSE(ControlReport{}.failed());
  CHECK(report.failed());
  const nlohmann::json json = controlToJson(report);
  CHECK(json["scenario"] == "control");
  REQUIRE(json["figures"].size() == report.figures.size());
  CHECK(json["figures"][0]["value"].get<double>() == Approx(612.345));
  CHECK(json["figures"][0]["unit"] == "ms");
  CHECK(json["figures"][2]["met"] == true);
  CHECK(json["figures"][2]["samples"] == 5);
  CHECK(json["figures"][3]["value"].is_null());
  CHECK(json["figures"][3]["failed"] == false);
  CHECK(json["figures"][4]["failed"] == true);
  CHECK(json["figures"][1]["met"].is_null());
  CHECK(json["notes"].size() == 1);
}

TEST_CASE("the control CSV has one row per figure and quotes fields with commas",
          "[bench][control]") {
  const std::string csv = controlToCsv(sampleReport());
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);
  CHECK(line == "scenario,group,figure,transport,value,unit,samples,target,met,detail,why,failed");
  std::vector<std::string> rows;
  while (std::getline(lines, line)) rows.push_back(line);
  REQUIRE(rows.size() == 5);
  CHECK_THAT(rows[0], Catch::StartsWith("control,registration,\"allocateMemory 1 GiB, populate "
                                        "on\",shm,612.345,ms,1,"));
  CHECK_THAT(rows[2], Catch::Contains("<= 100 ns/desc,yes,"));
  CHECK_THAT(rows[3], Catch::Contains(",shm,,,0,"));  // no value, no unit
  CHECK_THAT(rows[4], Catch::EndsWith(",yes"));
  CHECK_THAT(rows[4], Catch::Contains("\"TIMED_OUT: 2 requests, had not ended\""));
}

TEST_CASE("control figures survive the JSON a step's process hands back", "[bench][control]") {
  const ControlReport report = sampleReport();
  auto back = controlFromJson(controlToJson(report));
  REQUIRE(back.isOk());
  REQUIRE(back->figures.size() == report.figures.size());
  for (std::size_t i = 0; i < report.figures.size(); ++i) {
    const ControlFigure& a = report.figures[i];
    const ControlFigure& b = back->figures[i];
    CHECK(a.group == b.group);
    CHECK(a.name == b.name);
    CHECK(a.transport == b.transport);
    CHECK(a.value == b.value);
    CHECK(a.unit == b.unit);
    CHECK(a.samples == b.samples);
    CHECK(a.detail == b.detail);
    CHECK(a.target == b.target);
    CHECK(a.met == b.met);
    CHECK(a.why == b.why);
    CHECK(a.failed == b.failed);
  }
  CHECK(back->notes == report.notes);

  nlohmann::json broken = controlToJson(report);
  broken["figures"][1].erase("unit");
  auto refused = controlFromJson(broken);
  REQUIRE_FALSE(refused.isOk());
  CHECK(refused.status().code() == kvx::StatusCode::kProtocolError);
  CHECK_THAT(refused.status().message(), Catch::Contains("figure 1"));
}
