// kvx-test-labels: unit serial
// The bare reference's options: validation messages, defaults, and the command line both ways.
#include "bench/bare/bare_ucp_options.h"

#include <catch2/catch.hpp>

#include "bench/bare/bare_ucp_cli.h"

using namespace kvx;
using namespace kvx::bench;

namespace {

void requireInvalid(const BareUcpOptions& options, const std::string& needle) {
  const Status status = validate(options);
  INFO(status.toString());
  REQUIRE(status.code() == StatusCode::kInvalidArgument);
  REQUIRE_THAT(status.message(), Catch::Contains(needle));
}

}  // namespace

TEST_CASE("default bare options are valid and size the buffer beyond the cache", "[unit]") {
  BareUcpOptions options;
  REQUIRE(validate(options).isOk());
  CHECK(options.effectiveBufferBytes() == 256ull << 20);
  CHECK(options.slotCount() == (256ull << 20) / options.segmentBytes);

  options.segmentBytes = 16 << 20;
  options.window = 8;
  options.segments = 4;
  CHECK(options.effectiveBufferBytes() == 2ull * 8 * 4 * (16 << 20));

  options.bufferBytes = 100'000;
  options.segmentBytes = 4096;
  options.segments = 1;
  CHECK(options.effectiveBufferBytes() == 24 * 4096);  // whole segments only
}

TEST_CASE("invalid bare options name the option and the value", "[unit]") {
  BareUcpOptions o;
  o.transport = "rdma";
  requireInvalid(o, "--transport 'rdma'");
  o = {};
  o.segmentBytes = 100;
  requireInvalid(o, "--segment-bytes 100");
  o = {};
  o.segments = 0;
  requireInvalid(o, "--segments 0");
  o = {};
  o.window = 0;
  requireInvalid(o, "--window 0");
  o = {};
  o.bufferBytes = 8192;
  o.segmentBytes = 4096;
  o.segments = 3;
  requireInvalid(o, "holds 2 segment(s)");
  o = {};
  o.requests = 0;
  requireInvalid(o, "nothing to measure");
  o = {};
  o.memory = MemoryKind::kCuda;
  o.alloc = BufferAlloc::kUcx;
  requireInvalid(o, "--memory cuda needs --alloc registered");
  o = {};
  o.memory = MemoryKind::kCuda;
  o.memcpyReference = true;
  requireInvalid(o, "leave out --memcpy");
  o = {};
  o.device = -1;
  requireInvalid(o, "--device -1");
  o = {};
  o.seconds = -1;
  requireInvalid(o, "--seconds");
  o = {};
  o.seconds = 200;
  requireInvalid(o, "below --timeout-s");
  o = {};
  o.timeoutSeconds = 0;
  requireInvalid(o, "--timeout-s");
  o = {};
  o.targetSpinUs = -5;
  requireInvalid(o, "--target-spin-us");
  o = {};
  o.targetCpu = -2;
  requireInvalid(o, "--target-cpu -2");
  o = {};
  o.fixedOverhead = true;
  o.window = 4;
  requireInvalid(o, "--fixed-overhead");
  o.window = 1;
  o.segments = 61;  // a block of several segments (DeepSeek-V3's layers) is one request
  CHECK(validate(o).isOk());
  o = {};
  o.fixedOverhead = true;
  o.op = BareOp::kGet;
  requireInvalid(o, "--op get");
}

TEST_CASE("fixed overhead implies the notification", "[unit]") {
  BareUcpOptions o;
  o.fixedOverhead = true;
  REQUIRE(validate(o).isOk());
  CHECK(o.notifies());
  CHECK_FALSE(BareUcpOptions{}.notifies());
}

TEST_CASE("enum names parse back, and unknown names are refused", "[unit]") {
  for (BareOp op : {BareOp::kPut, BareOp::kGet}) CHECK(*parseBareOp(toString(op)) == op);
  for (SlotPattern p : {SlotPattern::kContiguous, SlotPattern::kRandom}) {
    CHECK(*parseSlotPattern(toString(p)) == p);
  }
  for (BufferAlloc a : {BufferAlloc::kRegistered, BufferAlloc::kUcx}) {
    CHECK(*parseBufferAlloc(toString(a)) == a);
  }
  CHECK_THAT(parseBareOp("write").status().message(), Catch::Contains("'write'"));
  CHECK_FALSE(parseSlotPattern("strided").isOk());
  CHECK_FALSE(parseBufferAlloc("cuda").isOk());
}

TEST_CASE("toArguments parses back to the same options", "[unit]") {
  BareUcpOptions o;
  o.transport = "tcp";
  o.netDevices = "veth1";
  o.alloc = BufferAlloc::kRegistered;
  o.memory = MemoryKind::kCuda;
  o.device = 3;
  o.op = BareOp::kGet;
  o.segmentBytes = 16384;
  o.segments = 7;
  o.window = 3;
  o.requests = 12345;
  o.seconds = 0.25;
  o.warmupRequests = 2;
  o.pattern = SlotPattern::kRandom;
  o.bufferBytes = 1 << 22;
  o.notify = true;
  o.targetSpinUs = 12.5;
  o.initiatorCpu = 0;
  o.targetCpu = 1;
  o.verify = false;
  o.memcpySeconds = 0.125;
  o.timeoutSeconds = 33;
  o.seed = 99;
  o.skipData = true;
  auto line = parseBareUcpCommandLine(toArguments(o));
  INFO(line.status().toString());
  REQUIRE(line.isOk());
  const BareUcpOptions& p = line->options;
  CHECK(line->role == BareRole::kInitiator);
  CHECK(p.transport == o.transport);
  CHECK(p.netDevices == o.netDevices);
  CHECK(p.alloc == o.alloc);
  CHECK(p.memory == o.memory);
  CHECK(p.device == o.device);
  CHECK(p.op == o.op);
  CHECK(p.segmentBytes == o.segmentBytes);
  CHECK(p.segments == o.segments);
  CHECK(p.window == o.window);
  CHECK(p.requests == o.requests);
  CHECK(p.seconds == o.seconds);
  CHECK(p.warmupRequests == o.warmupRequests);
  CHECK(p.pattern == o.pattern);
  CHECK(p.bufferBytes == o.bufferBytes);
  CHECK(p.notify == o.notify);
  CHECK(p.fixedOverhead == o.fixedOverhead);
  CHECK(p.targetSpinUs == o.targetSpinUs);
  CHECK(p.initiatorCpu == o.initiatorCpu);
  CHECK(p.targetCpu == o.targetCpu);
  CHECK(p.verify == o.verify);
  CHECK(p.memcpyReference == o.memcpyReference);
  CHECK(p.memcpyOnly == o.memcpyOnly);
  CHECK(p.memcpySeconds == o.memcpySeconds);
  CHECK(p.timeoutSeconds == o.timeoutSeconds);
  CHECK(p.seed == o.seed);
  CHECK(p.skipData == o.skipData);
}

TEST_CASE("the command line takes size suffixes, the role and output flags", "[unit]") {
  auto line =
      parseBareUcpCommandLine({"--role", "target", "--segment-bytes", "32K", "--buffer-bytes",
                               "16M", "--json", "out.json", "--quiet", "--fixed-overhead"});
  INFO(line.status().toString());
  REQUIRE(line.isOk());
  CHECK(line->role == BareRole::kTarget);
  CHECK(line->options.segmentBytes == 32768);
  CHECK(line->options.bufferBytes == 16u << 20);
  CHECK(line->jsonFile == "out.json");
  CHECK(line->quiet);
  CHECK(line->options.fixedOverhead);
}

TEST_CASE("the command line refuses bad input with a message", "[unit]") {
  CHECK_THAT(parseBareUcpCommandLine({"--window", "0"}).status().message(),
             Catch::Contains("--window 0"));
  CHECK_THAT(parseBareUcpCommandLine({"--op", "write"}).status().message(),
             Catch::Contains("--op 'write'"));
  CHECK_THAT(parseBareUcpCommandLine({"--memory", "gpu"}).status().message(),
             Catch::Contains("--memory 'gpu': use host or cuda"));
  CHECK_FALSE(parseBareUcpCommandLine({"--no-such-option"}).isOk());
  CHECK_FALSE(parseBareUcpCommandLine({"--role", "observer"}).isOk());
  auto help = parseBareUcpCommandLine({"--help"});
  REQUIRE(help.isOk());
  CHECK(help->helpRequested);
  CHECK_THAT(help->helpText, Catch::Contains("--segment-bytes"));
}
