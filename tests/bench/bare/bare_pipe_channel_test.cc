// kvx-test-labels: unit serial
// The bootstrap link of the bare reference: framed messages over pipes with deadlines, the
// target's messages, and a child process that cannot hang its parent.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "bench/bare/pipe_channel.h"
#include "bench/bare/target_protocol.h"
#include "process/child_process.h"

using namespace kvx;
using namespace kvx::bench;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

namespace {

struct Pipe {
  Pipe() { REQUIRE(::pipe2(fds, O_CLOEXEC) == 0); }
  ~Pipe() {
    closeRead();
    closeWrite();
  }
  void closeRead() {
    if (fds[0] >= 0) ::close(fds[0]);
    fds[0] = -1;
  }
  void closeWrite() {
    if (fds[1] >= 0) ::close(fds[1]);
    fds[1] = -1;
  }
  int fds[2] = {-1, -1};
};

steady_clock::time_point soon(int ms = 200) { return steady_clock::now() + milliseconds(ms); }

}  // namespace

TEST_CASE("messages cross a pipe whole and in order", "[unit]") {
  Pipe ab, ba;
  PipeChannel a(ba.fds[0], ab.fds[1]), b(ab.fds[0], ba.fds[1]);
  const std::vector<std::uint8_t> big(200'000, 0x5a);  // larger than the pipe's buffer
  REQUIRE(a.send(1, std::vector<std::uint8_t>{1, 2, 3}, soon()).isOk());
  REQUIRE(a.send(2, {}, soon()).isOk());
  auto first = b.receive(soon());
  REQUIRE(first.isOk());
  CHECK(first->type == 1);
  CHECK(first->payload == std::vector<std::uint8_t>{1, 2, 3});
  auto second = b.tryReceive();
  REQUIRE(second.isOk());
  REQUIRE(second->has_value());
  CHECK((*second)->type == 2);
  CHECK((*second)->payload.empty());
  auto none = b.tryReceive();
  REQUIRE(none.isOk());
  CHECK_FALSE(none->has_value());

  // The big message needs the reader: a send that nobody drains times out.
  CHECK(a.send(3, big, soon(50)).code() == StatusCode::kTimedOut);
}

TEST_CASE("a silent writer times out and a closed one is a peer failure", "[unit]") {
  Pipe p;
  PipeChannel reader(p.fds[0], -1);
  const auto start = steady_clock::now();
  CHECK(reader.receive(soon(100)).status().code() == StatusCode::kTimedOut);
  CHECK(steady_clock::now() - start < milliseconds(1000));
  p.closeWrite();
  CHECK(reader.receive(soon()).status().code() == StatusCode::kPeerFailed);
}

TEST_CASE("writing to a pipe whose reader is gone is a peer failure", "[unit]") {
  Pipe p;
  p.closeRead();
  ::signal(SIGPIPE, SIG_IGN);
  PipeChannel writer(-1, p.fds[1]);
  CHECK(writer.send(1, {}, soon()).code() == StatusCode::kPeerFailed);
}

TEST_CASE("target messages round-trip and truncation is refused", "[unit]") {
  TargetHello hello{{1, 2, 3, 4}, {9, 8}, 0x7f0000001000, 1 << 20};
  auto h = decodeHello(encode(hello));
  REQUIRE(h.isOk());
  CHECK(h->workerAddress == hello.workerAddress);
  CHECK(h->packedKey == hello.packedKey);
  CHECK(h->bufferAddress == hello.bufferAddress);
  CHECK(h->bufferBytes == hello.bufferBytes);

  TargetReport report{123456, 0xabcdef, {{16, 1000}, {17, 2000}}};
  auto r = decodeReport(encode(report));
  REQUIRE(r.isOk());
  CHECK(r->cpuNs == report.cpuNs);
  CHECK(r->checksum == report.checksum);
  REQUIRE(r->notifications.size() == 2);
  CHECK(r->notifications[1].requestId == 17);
  CHECK(r->notifications[1].receivedNs == 2000);

  auto bytes = encode(report);
  bytes.pop_back();
  CHECK(decodeReport(bytes).status().code() == StatusCode::kProtocolError);
  auto helloBytes = encode(hello);
  helloBytes.resize(14);  // the address, then half of the key's length
  CHECK_THAT(decodeHello(helloBytes).status().message(), Catch::Contains("packedKey"));
  helloBytes = encode(hello);
  helloBytes.push_back(0);
  CHECK_THAT(decodeHello(helloBytes).status().message(), Catch::Contains("trailing"));
}

TEST_CASE("a child process reports its output and exit code", "[unit]") {
  auto child = process::ChildProcess::spawn(
      "/bin/sh", {"-c", "echo out; echo err >&2; exit 3"},
      {.stdinPipe = true, .captureStderr = true, .killWithParent = true});
  REQUIRE(child.isOk());
  auto output = child->readToEnd(soon(5000));
  REQUIRE(output.isOk());
  CHECK(output->out == "out\n");
  CHECK(output->err == "err\n");
  auto code = child->waitExit(soon(5000));
  REQUIRE(code.isOk());
  CHECK(*code == 3);
}

TEST_CASE("a child that does not finish is killed at the deadline", "[unit]") {
  auto child = process::ChildProcess::spawn(
      "/bin/sleep", {"30"}, {.stdinPipe = true, .captureStderr = true, .killWithParent = true});
  REQUIRE(child.isOk());
  const auto start = steady_clock::now();
  CHECK(child->readToEnd(soon(100)).status().code() == StatusCode::kTimedOut);
  CHECK(child->waitExit(soon(100)).status().code() == StatusCode::kTimedOut);
  CHECK(steady_clock::now() - start < milliseconds(2000));
}

TEST_CASE("a child that cannot start exits with 127", "[unit]") {
  auto child = process::ChildProcess::spawn(
      "/no/such/binary", {}, {.stdinPipe = true, .captureStderr = true, .killWithParent = true});
  REQUIRE(child.isOk());
  auto code = child->waitExit(soon(5000));
  REQUIRE(code.isOk());
  CHECK(*code == 127);
}
