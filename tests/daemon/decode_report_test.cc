// kvx-test-labels: unit serial
// The decode agent's --report: the keys `kvx bench` reads (daemon/decode_report.h).
#include "daemon/decode_report.h"

#include <catch2/catch.hpp>

using namespace kvx::daemon;

TEST_CASE("the decode report lists every arrival with its timing and verification",
          "[decode_report]") {
  const std::vector<ArrivalRecord> arrivals{
      {"prompt-0", 1000, 12, {"prefill-0", "prefill-1"}, 12, 0},
      {"prompt-1", 2000, 3, {"prefill-1"}, 2, 1}};
  const auto json = decodeReport("decode-1", arrivals, CpuTime{10, 20}, CpuTime{110, 220}, 40);
  CHECK(json["agent"] == "decode-1");
  REQUIRE(json["arrivals"].size() == 2);
  const auto& first = json["arrivals"][0];
  CHECK(first["id"] == "prompt-0");
  CHECK(first["arrivedNs"] == 1000);
  CHECK(first["blocks"] == 12);
  CHECK(first["peers"] == nlohmann::json::array({"prefill-0", "prefill-1"}));
  CHECK(first["verifiedBlocks"] == 12);
  CHECK(first["corruptBlocks"] == 0);
  CHECK(json["verifiedBlocks"] == 14);
  CHECK(json["corruptBlocks"] == 1);
  CHECK(json["cpuStart"]["userUs"] == 10);
  CHECK(json["cpuStart"]["sysUs"] == 20);
  CHECK(json["cpuEnd"]["userUs"] == 110);
  CHECK(json["cpu"] == json["cpuEnd"]);
  CHECK(json["readyCpuUs"] == 40);
}

TEST_CASE("report clocks: steady nanoseconds and a growing CPU time", "[decode_report]") {
  const std::int64_t before = monotonicNowNs();
  const CpuTime start = processCpuTime();
  volatile std::uint64_t sink = 0;
  for (std::uint64_t i = 0; i < 20'000'000; ++i) sink = sink + i;
  const CpuTime end = processCpuTime();
  CHECK(monotonicNowNs() >= before);
  CHECK(monotonicNs(kvx::Clock::time_point(std::chrono::nanoseconds(42))) == 42);
  CHECK(end.userUs + end.sysUs > start.userUs + start.sysUs);
  CHECK(toJson(end)["userUs"] == end.userUs);
}
