// kvx-test-labels: ucx multiprocess
// Real short runs of the bare UCP reference through runBareUcp, as kvx bench calls it: shm and
// tcp, put and get, contiguous and random, notify and fixed overhead. Each checks that bytes
// really moved (both buffers' checksums against the expected patterns) and that the JSON
// parsed. The binary is $KVX_BARE_UCP, or bench/kvx-bare-ucp in this build tree.
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "bench/bare/bare_ucp_cli.h"
#include "bench/bare/bare_ucp_runner.h"
#include "process/child_process.h"

using namespace kvx;
using namespace kvx::bench;

namespace {

std::string bareBinary() {
  if (const char* path = std::getenv("KVX_BARE_UCP"); path != nullptr && *path != '\0') {
    return path;
  }
  const auto guess = std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path() /
                     "bench" / "kvx-bare-ucp";
  if (!std::filesystem::exists(guess)) {
    FAIL("no kvx-bare-ucp at " << guess.string() << ": build it or set KVX_BARE_UCP");
  }
  return guess.string();
}

// Small enough for a second or two, with a buffer that requests do not cover entirely, so
// that untouched slots are checked too.
BareUcpOptions tiny(const std::string& transport, BareOp op, SlotPattern pattern) {
  BareUcpOptions o;
  o.transport = transport;
  o.op = op;
  o.pattern = pattern;
  o.segmentBytes = 4096;
  o.segments = 4;
  o.window = 4;
  o.requests = 200;
  o.warmupRequests = 4;
  o.bufferBytes = 4 << 20;
  o.timeoutSeconds = 30;
  return o;
}

BareUcpResult run(const BareUcpOptions& options) {
  auto result = runBareUcp(options, bareBinary());
  INFO(result.status().toString());
  REQUIRE(result.isOk());
  return std::move(result).value();
}

void requireMoved(const BareUcpOptions& o, const BareUcpResult& r) {
  INFO(toJson(r));
  CHECK(r.verify.checked);
  CHECK(r.verify.ok);
  CHECK(r.transport == o.transport);
  CHECK(r.op == std::string(toString(o.op)));
  CHECK(r.requests == o.requests);
  CHECK(r.payloadBytes == o.requests * o.segments * o.segmentBytes);
  CHECK(r.gbps > 0);
  CHECK(r.seconds > 0);
  CHECK(r.initiatorLatency.count == o.requests);
  CHECK(r.initiatorLatency.p50 > 0);
  CHECK(r.initiatorLatency.max >= r.initiatorLatency.p99);
  CHECK(r.initiatorCpuUsPerRequest > 0);
  CHECK(r.ucxVersion.rfind("1.", 0) == 0);
  CHECK_THAT(r.settings, Catch::Contains("UCX_TLS="));
  if (o.transport == "tcp") {
    CHECK_THAT(r.lanes, Catch::Contains("tcp/lo"));
  } else {
    CHECK_THAT(r.lanes, Catch::Contains("memory"));
  }
  if (o.notifies()) {
    REQUIRE(r.receiverLatency.has_value());
    CHECK(r.receiverLatency->count == o.requests);
    CHECK(r.receiverLatency->p50 > 0);
  } else {
    CHECK_FALSE(r.receiverLatency.has_value());
  }
}

// Processes whose command line contains `marker` (a seed no other test uses).
std::vector<pid_t> processesWith(const std::string& marker) {
  std::vector<pid_t> pids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream file(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    for (char& c : cmdline) c = c == '\0' ? ' ' : c;
    if (cmdline.find("--role target") != std::string::npos &&
        cmdline.find(marker) != std::string::npos) {
      pids.push_back(std::stoi(name));
    }
  }
  return pids;
}

// Starts a long timed run with `seed` as a marker and waits until its target is up.
process::ChildProcess startLongRun(const std::string& transport, const std::string& seed,
                                   pid_t& target) {
  BareUcpOptions o = tiny(transport, BareOp::kPut, SlotPattern::kContiguous);
  o.notify = true;
  o.requests = 0;
  o.seconds = 20;
  o.seed = std::stoull(seed);
  auto child = process::ChildProcess::spawn(
      bareBinary(), toArguments(o),
      {.stdinPipe = true, .captureStderr = true, .killWithParent = true});
  REQUIRE(child.isOk());
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::vector<pid_t> targets;
  while (targets.empty() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    targets = processesWith("--seed " + seed + " ");
  }
  REQUIRE(targets.size() == 1);
  target = targets.front();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // into the loop
  return std::move(child).value();
}

}  // namespace

TEST_CASE("the bare loop moves and verifies bytes over shm and tcp", "[ucx][multiprocess]") {
  for (const char* transport : {"shm", "tcp"}) {
    for (BareOp op : {BareOp::kPut, BareOp::kGet}) {
      for (SlotPattern pattern : {SlotPattern::kContiguous, SlotPattern::kRandom}) {
        BareUcpOptions o = tiny(transport, op, pattern);
        o.notify = pattern == SlotPattern::kRandom;
        DYNAMIC_SECTION(transport << " " << toString(op) << " " << toString(pattern)) {
          requireMoved(o, run(o));
        }
      }
    }
  }
}

TEST_CASE("fixed overhead: one put + flush + AM at a time, seen by the receiver",
          "[ucx][multiprocess]") {
  for (const char* transport : {"shm", "tcp"}) {
    DYNAMIC_SECTION(transport) {
      BareUcpOptions o = tiny(transport, BareOp::kPut, SlotPattern::kContiguous);
      o.fixedOverhead = true;
      o.segments = 1;
      o.window = 1;
      o.segmentBytes = 32768;
      const BareUcpResult r = run(o);
      requireMoved(o, r);
      CHECK(r.mode == "fixed-overhead");
      CHECK(r.notify);
      // Each request retires only once the target acknowledged it: all of them were seen.
      REQUIRE(r.receiverLatency);
      CHECK(r.receiverLatency->count == r.requests);
    }
  }
}

TEST_CASE("fixed overhead without data: flush + AM alone, one at a time", "[ucx][multiprocess]") {
  for (const char* transport : {"shm", "tcp"}) {
    DYNAMIC_SECTION(transport) {
      BareUcpOptions o = tiny(transport, BareOp::kPut, SlotPattern::kContiguous);
      o.fixedOverhead = true;
      o.segments = 1;
      o.window = 1;
      o.skipData = true;
      o.verify = false;
      const BareUcpResult r = run(o);
      CHECK(r.mode == "fixed-overhead");
      REQUIRE(r.receiverLatency);
      CHECK(r.receiverLatency->count == r.requests);
      CHECK(r.requests == o.requests);
    }
  }
}

TEST_CASE("a put or get that moves no data fails verification", "[ucx][multiprocess]") {
  for (BareOp op : {BareOp::kPut, BareOp::kGet}) {
    DYNAMIC_SECTION(toString(op)) {
      BareUcpOptions o = tiny("shm", op, SlotPattern::kContiguous);
      o.skipData = true;
      const BareUcpResult r = run(o);
      CHECK(r.verify.checked);
      CHECK_FALSE(r.verify.ok);
      CHECK_THAT(r.verify.detail, Catch::Contains("MISMATCH"));
    }
  }
}

TEST_CASE("UCX-allocated buffers, timed runs and a spinning target work", "[ucx][multiprocess]") {
  BareUcpOptions o = tiny("shm", BareOp::kGet, SlotPattern::kRandom);
  o.alloc = BufferAlloc::kUcx;
  o.requests = 0;
  o.seconds = 0.2;
  o.targetSpinUs = 50;
  o.notify = true;
  o.initiatorCpu = 0;  // CPU 0 exists everywhere
  o.targetCpu = 0;
  const BareUcpResult r = run(o);
  INFO(toJson(r));
  CHECK(r.alloc == "ucx");
  CHECK(r.verify.ok);
  CHECK(r.requests > 0);
  CHECK(r.seconds >= 0.2);
  CHECK(r.seconds < 2);
  REQUIRE(r.receiverLatency.has_value());
  CHECK(r.receiverLatency->count == r.requests);
  CHECK(r.targetSpinUs == 50);
  CHECK(r.targetCpu == 0);
}

// The loop on GPU memory needs a UCX whose put and get take it, as kvx's direct path does;
// the positive run needs a GPU (session 20's H100 run, docs/benchmarks.md). Here (Debian's UCX
// 1.13.1, or 1.22 without a GPU driver) it is refused before anything moves, saying why.
TEST_CASE("the bare loop on GPU memory is refused by a UCX that cannot move it",
          "[ucx][multiprocess]") {
  BareUcpOptions o = tiny("shm", BareOp::kPut, SlotPattern::kContiguous);
  o.memory = MemoryKind::kCuda;
  auto result = runBareUcp(o, bareBinary());
  if (result.isOk()) {
    // Only a UCX with CUDA and a GPU get here: then the bytes must have moved.
    requireMoved(o, *result);
    CHECK(result->memory == "cuda");
    return;
  }
  CHECK_THAT(result.status().message(), Catch::Contains("this UCX cannot move GPU memory"));
}

TEST_CASE("the memcpy reference reports a bandwidth", "[ucx][multiprocess]") {
  BareUcpOptions o;
  o.memcpyOnly = true;
  o.segmentBytes = 65536;
  o.memcpySeconds = 0.05;
  const BareUcpResult r = run(o);
  CHECK(r.mode == "memcpy-only");
  REQUIRE(r.memcpy.has_value());
  CHECK(r.memcpy->gbps > 0.1);
  CHECK(r.memcpy->bufferBytes >= (256u << 20));
  CHECK(r.memcpy->bytes >= r.memcpy->bufferBytes);
}

TEST_CASE("runBareUcp reports bad options and a missing binary as errors", "[ucx][multiprocess]") {
  BareUcpOptions o = tiny("shm", BareOp::kPut, SlotPattern::kContiguous);
  o.window = 0;
  CHECK(runBareUcp(o, bareBinary()).status().code() == StatusCode::kInvalidArgument);
  o.window = 1;
  auto missing = runBareUcp(o, "/no/such/kvx-bare-ucp");
  CHECK_FALSE(missing.isOk());
  CHECK_THAT(missing.status().message(), Catch::Contains("exited with code 127"));
}

TEST_CASE("the target process dies with the initiator", "[ucx][multiprocess]") {
  pid_t target = -1;
  process::ChildProcess initiator = startLongRun("tcp", "918273645", target);
  ::kill(initiator.pid(), SIGKILL);
  auto code = initiator.waitExit(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  REQUIRE(code.isOk());
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (::kill(target, 0) == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Gone, or a zombie waiting for init to reap it.
  std::ifstream stat("/proc/" + std::to_string(target) + "/stat");
  std::string pid, comm, state;
  stat >> pid >> comm >> state;
  CHECK((!stat || state == "Z"));
}

TEST_CASE("the initiator fails promptly when its target dies", "[ucx][multiprocess]") {
  // On shm the endpoint reports nothing for 20 s (keepalive): the pipe's EOF tells.
  const bool shm = GENERATE(true, false);
  pid_t target = -1;
  process::ChildProcess initiator =
      startLongRun(shm ? "shm" : "tcp", shm ? "918273646" : "918273647", target);
  const auto start = std::chrono::steady_clock::now();
  ::kill(target, SIGKILL);
  auto output = initiator.readToEnd(start + std::chrono::seconds(10));
  REQUIRE(output.isOk());
  auto code = initiator.waitExit(start + std::chrono::seconds(10));
  REQUIRE(code.isOk());
  CHECK(*code == kExitFailed);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
  CHECK_THAT(output->err, Catch::Contains("target"));
  CHECK(output->out.empty());
}
