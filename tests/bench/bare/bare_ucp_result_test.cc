// kvx-test-labels: unit serial
// The bare reference's result and its JSON form: round trip, nulls, and refusals that name
// the key.
#include "bench/bare/bare_ucp_result.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace kvx;
using namespace kvx::bench;

namespace {

BareUcpResult sample() {
  BareUcpResult r;
  r.ucxVersion = "1.13.1";
  r.mode = "loop";
  r.transport = "tcp";
  r.netDevices = "lo";
  r.alloc = "registered";
  r.settings = "UCX_TLS=tcp UCX_NET_DEVICES=lo";
  r.lanes = "tcp/lo";
  r.op = "get";
  r.pattern = "random";
  r.notify = true;
  r.targetSpinUs = 50;
  r.initiatorCpu = 0;
  r.targetCpu = 1;
  r.segmentBytes = 4096;
  r.segments = 16;
  r.window = 8;
  r.bufferBytes = 1ull << 28;
  r.requests = 1000;
  r.warmupRequests = 16;
  r.seconds = 0.5;
  r.payloadBytes = 1000ull * 16 * 4096;
  r.gbps = 0.131072;
  r.opsPerSecond = 32000;
  r.requestsPerSecond = 2000;
  r.initiatorLatency = LatencyFigures{1000, 1.5, 3.25, 3, 4, 9.5, 12};
  r.receiverLatency = LatencyFigures{1000, 2.5, 4.25, 4, 5, 10.5, 13};
  r.initiatorCpuUsPerRequest = 3.5;
  r.targetCpuUsPerRequest = 1.25;
  r.verify = VerifyFigures{true, true, "all ok"};
  r.memcpy = MemcpyFigures{4096, 1ull << 28, 1ull << 32, 0.4, 10.7};
  return r;
}

void requireSame(const LatencyFigures& a, const LatencyFigures& b) {
  CHECK(a.count == b.count);
  CHECK(a.min == b.min);
  CHECK(a.mean == b.mean);
  CHECK(a.p50 == b.p50);
  CHECK(a.p90 == b.p90);
  CHECK(a.p99 == b.p99);
  CHECK(a.max == b.max);
}

}  // namespace

TEST_CASE("a bare result survives JSON both ways", "[unit]") {
  const BareUcpResult r = sample();
  const std::string json = toJson(r);
  CHECK(json.find('\n') == std::string::npos);
  auto parsed = parseBareUcpResult(json);
  INFO(parsed.status().toString());
  REQUIRE(parsed.isOk());
  const BareUcpResult& p = *parsed;
  CHECK(p.ucxVersion == r.ucxVersion);
  CHECK(p.mode == r.mode);
  CHECK(p.transport == r.transport);
  CHECK(p.netDevices == r.netDevices);
  CHECK(p.alloc == r.alloc);
  CHECK(p.settings == r.settings);
  CHECK(p.lanes == r.lanes);
  CHECK(p.op == r.op);
  CHECK(p.pattern == r.pattern);
  CHECK(p.notify == r.notify);
  CHECK(p.targetSpinUs == r.targetSpinUs);
  CHECK(p.initiatorCpu == r.initiatorCpu);
  CHECK(p.targetCpu == r.targetCpu);
  CHECK(p.segmentBytes == r.segmentBytes);
  CHECK(p.segments == r.segments);
  CHECK(p.window == r.window);
  CHECK(p.bufferBytes == r.bufferBytes);
  CHECK(p.requests == r.requests);
  CHECK(p.warmupRequests == r.warmupRequests);
  CHECK(p.seconds == r.seconds);
  CHECK(p.payloadBytes == r.payloadBytes);
  CHECK(p.gbps == r.gbps);
  CHECK(p.opsPerSecond == r.opsPerSecond);
  CHECK(p.requestsPerSecond == r.requestsPerSecond);
  requireSame(p.initiatorLatency, r.initiatorLatency);
  REQUIRE(p.receiverLatency.has_value());
  requireSame(*p.receiverLatency, *r.receiverLatency);
  CHECK(p.initiatorCpuUsPerRequest == r.initiatorCpuUsPerRequest);
  CHECK(p.targetCpuUsPerRequest == r.targetCpuUsPerRequest);
  CHECK(p.verify.checked == r.verify.checked);
  CHECK(p.verify.ok == r.verify.ok);
  CHECK(p.verify.detail == r.verify.detail);
  REQUIRE(p.memcpy.has_value());
  CHECK(p.memcpy->segmentBytes == r.memcpy->segmentBytes);
  CHECK(p.memcpy->bufferBytes == r.memcpy->bufferBytes);
  CHECK(p.memcpy->bytes == r.memcpy->bytes);
  CHECK(p.memcpy->seconds == r.memcpy->seconds);
  CHECK(p.memcpy->gbps == r.memcpy->gbps);
}

TEST_CASE("unmeasured parts are JSON null and come back empty", "[unit]") {
  BareUcpResult r = sample();
  r.receiverLatency.reset();
  r.memcpy.reset();
  const auto json = nlohmann::json::parse(toJson(r));
  CHECK(json["latencyUs"]["receiver"].is_null());
  CHECK(json["memcpy"].is_null());
  CHECK(json["tool"] == "kvx-bare-ucp");
  CHECK(json["schemaVersion"] == 1);
  CHECK(json["cpuUsPerRequest"]["target"] == 1.25);
  auto parsed = parseBareUcpResult(json.dump());
  REQUIRE(parsed.isOk());
  CHECK_FALSE(parsed->receiverLatency.has_value());
  CHECK_FALSE(parsed->memcpy.has_value());
}

TEST_CASE("keys added after version 1's first form are optional to a reader", "[unit]") {
  auto json = nlohmann::json::parse(toJson(sample()));
  json.erase("initiatorCpu");
  json.erase("targetCpu");
  auto parsed = parseBareUcpResult(json.dump());
  INFO(parsed.status().toString());
  REQUIRE(parsed.isOk());
  CHECK(parsed->initiatorCpu == -1);
  CHECK(parsed->targetCpu == -1);
}

TEST_CASE("malformed results are refused naming what is wrong", "[unit]") {
  CHECK_THAT(parseBareUcpResult("not json").status().message(), Catch::Contains("not a JSON"));
  CHECK_THAT(parseBareUcpResult("[1,2]").status().message(), Catch::Contains("not a JSON"));

  auto json = nlohmann::json::parse(toJson(sample()));
  auto broken = json;
  broken["tool"] = "ucx_perftest";
  CHECK_THAT(parseBareUcpResult(broken.dump()).status().message(), Catch::Contains("'tool'"));
  broken = json;
  broken.erase("gbps");
  CHECK_THAT(parseBareUcpResult(broken.dump()).status().message(),
             Catch::Contains("'gbps' is missing"));
  broken = json;
  broken["latencyUs"]["initiator"]["p99"] = "fast";
  CHECK_THAT(parseBareUcpResult(broken.dump()).status().message(),
             Catch::Contains("'p99' is not a number"));
  broken = json;
  broken["requests"] = -3;
  CHECK_THAT(parseBareUcpResult(broken.dump()).status().message(),
             Catch::Contains("'requests' is not a non-negative integer"));
  broken = json;
  broken["schemaVersion"] = 2;
  CHECK_THAT(parseBareUcpResult(broken.dump()).status().message(),
             Catch::Contains("'schemaVersion'"));
}

TEST_CASE("the summary line carries the headline figures", "[unit]") {
  BareUcpResult r = sample();
  const std::string line = summaryLine(r);
  CHECK_THAT(line, Catch::Contains("tcp"));
  CHECK_THAT(line, Catch::Contains("0.131 GB/s"));
  CHECK_THAT(line, Catch::Contains("receiver 4.0 us"));
  CHECK_THAT(line, Catch::Contains("verify ok"));
  CHECK_THAT(line, Catch::Contains("memcpy 10.70 GB/s"));
  r.verify.ok = false;
  CHECK_THAT(summaryLine(r), Catch::Contains("verify FAILED"));
}

TEST_CASE("latency figures are the summary in microseconds", "[unit]") {
  workload::LatencyRecorder recorder;
  for (int us = 1; us <= 100; ++us) recorder.add(std::chrono::microseconds(us));
  const LatencyFigures f = latencyFigures(recorder.summary());
  CHECK(f.count == 100);
  CHECK(f.min == 1.0);
  CHECK(f.p50 == 50.0);
  CHECK(f.p90 == 90.0);
  CHECK(f.p99 == 99.0);
  CHECK(f.max == 100.0);
  CHECK(f.mean == 50.5);
}
