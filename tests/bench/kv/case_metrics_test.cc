// kvx-test-labels: unit serial
#include "bench/kv/case_metrics.h"

#include <catch2/catch.hpp>

using namespace kvx;
using namespace kvx::bench;
using nlohmann::json;

namespace {

json request(const std::string& id, std::int64_t submit, std::int64_t done, std::uint64_t bytes,
             bool released = true) {
  return {{"id", id},
          {"submitNs", submit},
          {"doneNs", done},
          {"bytes", bytes},
          {"released", released},
          {"descriptors", 100},
          {"operations", 4},
          {"error", released ? "" : "TIMED_OUT: gave up"}};
}

json prefillReport(std::vector<json> requests, double cpuUs, double readyCpuUs = 0) {
  return {{"requests", requests},
          {"cpuStart", {{"userUs", 1000.0}, {"sysUs", 0.0}}},
          {"cpuEnd", {{"userUs", 1000.0 + cpuUs + readyCpuUs}, {"sysUs", 0.0}}},
          {"readyCpuUs", readyCpuUs}};
}

}  // namespace

TEST_CASE("latencies, bandwidth and per-request figures come from both sides' reports", "[bench]") {
  BenchCase c;
  // 250 us of the prefill's CPU readied the decode pool: once, not per request.
  const std::vector<json> prefills = {prefillReport(
      {request("r-0", 1'000'000, 3'000'000, 2000), request("r-1", 2'000'000, 5'000'000, 2000),
       request("r-2", 2'000'000, 9'000'000, 0, false)},
      300, 250)};
  const std::vector<json> decodes = {
      {{"arrivals",
        {{{"id", "r-0"}, {"arrivedNs", 2'500'000}}, {{"id", "r-1"}, {"arrivedNs", 4'000'000}}}},
       {"verifiedBlocks", 10},
       {"corruptBlocks", 0},
       {"cpu", {{"userUs", 50.0}, {"sysUs", 50.0}}}}};
  auto m = computeMetrics(c, prefills, decodes);
  REQUIRE(m.isOk());
  CHECK(m->requests == 3);
  CHECK(m->released == 2);
  CHECK(m->failed == 1);
  REQUIRE(m->errors.size() == 1);
  CHECK_THAT(m->errors[0], Catch::Contains("r-2"));
  CHECK(m->bytes == 4000);
  CHECK(m->wallSeconds == Approx(0.004));  // 1 ms .. 5 ms
  CHECK(m->busySeconds == Approx(0.004));  // [1, 3] and [2, 5] ms overlap
  CHECK(m->gbps == Approx(4000.0 / 4'000'000));
  CHECK(m->done.p50 == std::chrono::milliseconds(2));
  CHECK(m->done.max == std::chrono::milliseconds(3));
  CHECK(m->notified.count == 2);
  CHECK(m->notified.min == std::chrono::microseconds(1500));
  CHECK(m->notified.max == std::chrono::milliseconds(2));
  CHECK(m->descriptorsPerRequest == 100);
  CHECK(m->operationsPerRequest == 4);
  CHECK(m->prefillCpuUsPerRequest == 150);
  CHECK(m->decodeCpuUsPerRequest == 50);
  CHECK(m->verifiedBlocks == 10);
  CHECK(m->notifiedMs == std::vector<double>{1.5, 2.0});
}

TEST_CASE("CPU per request leaves out content filling and checking and emulated GPU copies",
          "[bench]") {
  BenchCase c;
  json prefill = prefillReport(
      {request("r-0", 1'000'000, 3'000'000, 2000), request("r-1", 2'000'000, 5'000'000, 2000)}, 0);
  // 1,000 us of CPU in all: 300 filling blocks, 500 in the fake runtime's memcpys.
  prefill["cpuStart"] = {
      {"userUs", 1000.0}, {"sysUs", 0.0}, {"contentUs", 40.0}, {"emulatedCopyUs", 60.0}};
  prefill["cpuEnd"] = {
      {"userUs", 1800.0}, {"sysUs", 200.0}, {"contentUs", 340.0}, {"emulatedCopyUs", 560.0}};
  json decode = {
      {"arrivals",
       {{{"id", "r-0"}, {"arrivedNs", 2'500'000}}, {{"id", "r-1"}, {"arrivedNs", 4'000'000}}}},
      {"cpuStart", {{"userUs", 0.0}, {"sysUs", 0.0}}},
      {"cpuEnd",
       {{"userUs", 700.0}, {"sysUs", 100.0}, {"contentUs", 400.0}, {"emulatedCopyUs", 0.0}}}};
  auto m = computeMetrics(c, {prefill}, {decode});
  REQUIRE(m.isOk());
  CHECK(m->prefillCpuUsPerRequest == 100);  // (1000 - 300 - 500) / 2
  CHECK(m->decodeCpuUsPerRequest == 200);   // (800 - 400) / 2
}

TEST_CASE("a gather's notification latency starts at its earliest part", "[bench]") {
  BenchCase c;
  const std::vector<json> prefills = {prefillReport({request("g@d0", 5'000, 20'000, 10)}, 0),
                                      prefillReport({request("g@d0", 1'000, 30'000, 10)}, 0)};
  const std::vector<json> decodes = {{{"arrivals", {{{"id", "g"}, {"arrivedNs", 31'000}}}}}};
  auto m = computeMetrics(c, prefills, decodes);
  REQUIRE(m.isOk());
  CHECK(m->notified.count == 1);
  CHECK(m->notified.max == std::chrono::microseconds(30));
  CHECK(destinationIdOf("g@d12") == "g");
  CHECK(destinationIdOf("plain") == "plain");
  // Two senders: a fairness figure.
  CHECK(m->senderGbps.size() == 2);
  CHECK(m->jainFairness > 0.5);
  CHECK(m->jainFairness <= 1.0);
}

TEST_CASE("time with nothing in flight is not transfer time", "[bench]") {
  const std::vector<json> prefills = {prefillReport(
      {request("a", 0, 1'000'000, 1000), request("b", 9'000'000, 10'000'000, 1000)}, 0)};
  auto m = computeMetrics(BenchCase{}, prefills, {});
  REQUIRE(m.isOk());
  CHECK(m->wallSeconds == Approx(0.010));
  CHECK(m->busySeconds == Approx(0.002));
  CHECK(m->gbps == Approx(2000.0 / 2'000'000));
}

TEST_CASE("the exposed tail counts from the last layer handed over", "[bench]") {
  BenchCase c;
  c.layerwise = true;
  c.layerMs = 1;
  json r = request("r", 0, 40'000'000, 1);
  r["lastLayerNs"] = 33'500'000;  // 32 layers of 1 ms, plus sleeps that overshot
  const std::vector<json> prefills = {prefillReport({r}, 0)};
  const std::vector<json> decodes = {{{"arrivals", {{{"id", "r"}, {"arrivedNs", 35'000'000}}}}}};
  auto m = computeMetrics(c, prefills, decodes);
  REQUIRE(m.isOk());
  CHECK(m->exposedTail.max == std::chrono::microseconds(1500));
  CHECK(m->exposedTail.count == 1);
}

TEST_CASE("latency per MiB moved separates load from prompt size", "[bench]") {
  // A 1 MiB request in 1 ms, a 4 MiB one in 4 ms: equal service per MiB; one moving no bytes
  // (all prefix-cached) is left out. Then a 1 MiB request that waited 6 ms behind others.
  std::vector<json> requests = {request("a", 0, 1'000'000, 1u << 20),
                                request("b", 0, 4'000'000, 4u << 20), request("c", 0, 50'000, 0)};
  auto even = computeMetrics(BenchCase{}, {prefillReport(requests, 0)}, {});
  REQUIRE(even.isOk());
  CHECK(even->donePerMiB.count == 2);
  CHECK(even->donePerMiB.min == std::chrono::milliseconds(1));
  CHECK(even->donePerMiB.max == std::chrono::milliseconds(1));
  requests.push_back(request("d", 0, 6'000'000, 1u << 20));
  auto queued = computeMetrics(BenchCase{}, {prefillReport(requests, 0)}, {});
  REQUIRE(queued.isOk());
  CHECK(queued->donePerMiB.count == 3);
  CHECK(queued->donePerMiB.max == std::chrono::milliseconds(6));
}

TEST_CASE("done latency splits into placing and moving; late submits are counted apart",
          "[bench]") {
  // a: placed after 1 ms, done at 5 ms, submitted 2 ms after its arrival.
  json a = request("a", 0, 5'000'000, 1);
  a["queuedNs"] = 1'000'000;
  a["arrivalMs"] = 10.0;
  a["submittedAtMs"] = 12.0;
  // b: a placement that claims more than the whole latency is capped at it; submitted
  // "before" its arrival (clock rounding) counts as no lag.
  json b = request("b", 0, 3'000'000, 1);
  b["queuedNs"] = 9'000'000;
  b["arrivalMs"] = 20.0;
  b["submittedAtMs"] = 19.5;
  auto m = computeMetrics(BenchCase{}, {prefillReport({a, b}, 0)}, {});
  REQUIRE(m.isOk());
  CHECK(m->placing.min == std::chrono::milliseconds(1));
  CHECK(m->placing.max == std::chrono::milliseconds(3));
  CHECK(m->moving.min == std::chrono::milliseconds(0));
  CHECK(m->moving.max == std::chrono::milliseconds(4));
  CHECK(m->submitLag.min == std::chrono::milliseconds(0));
  CHECK(m->submitLag.max == std::chrono::milliseconds(2));
}

TEST_CASE("a trace's latency from arrival, against an ideal FIFO link at the run's own rate",
          "[bench]") {
  // a: arrives at 0, submitted at 2 ms, done at 4 ms. b: arrives at 1 ms, submitted at 4 ms,
  // done at 6 ms. Each moves 1 MB; busy 4 ms, so the run's rate is 0.5 GB/s.
  json a = request("a", 2'000'000, 4'000'000, 1'000'000);
  a["arrivalMs"] = 0.0;
  a["submittedAtMs"] = 2.0;
  json b = request("b", 4'000'000, 6'000'000, 1'000'000);
  b["arrivalMs"] = 1.0;
  b["submittedAtMs"] = 4.0;
  auto m = computeMetrics(BenchCase{}, {prefillReport({a, b}, 0)}, {});
  REQUIRE(m.isOk());
  CHECK(m->gbps == Approx(0.5));
  CHECK(m->sinceArrival.min == std::chrono::milliseconds(4));
  CHECK(m->sinceArrival.max == std::chrono::milliseconds(5));
  // The ideal link moves a from 0 to 2 ms, then b (waiting since 1 ms) from 2 to 4 ms.
  REQUIRE(m->idealLink.count == 2);
  CHECK(m->idealLink.min == std::chrono::milliseconds(2));
  CHECK(m->idealLink.max == std::chrono::milliseconds(3));
}

TEST_CASE("a report without the timing fields is an error naming the field", "[bench]") {
  json bad = request("r", 0, 1, 1);
  bad.erase("submitNs");
  auto m = computeMetrics(BenchCase{}, {prefillReport({bad}, 0)}, {});
  CHECK(m.status().code() == StatusCode::kProtocolError);
  CHECK_THAT(m.status().message(), Catch::Contains("submitNs"));
}
