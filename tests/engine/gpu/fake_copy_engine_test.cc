// kvx-test-labels: unit
#include "engine/gpu/fake_copy_engine.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <thread>
#include <vector>

#include "engine/gpu/copy_ticket.h"
#include "engine/gpu/gpu_runtime.h"

using namespace kvx;
using namespace kvx::engine::gpu;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// Counts the callbacks of one copy and keeps the last status.
struct Outcome {
  std::atomic<int> calls{0};
  std::mutex mutex;
  Status status;
  CopyCallback callback() {
    return [this](Status s) {
      std::lock_guard<std::mutex> lock(mutex);
      status = std::move(s);
      ++calls;
    };
  }
  Status get() {
    std::lock_guard<std::mutex> lock(mutex);
    return status;
  }
};

CopyRequest request(std::vector<std::byte>& to, const std::vector<std::byte>& from,
                    CopyKind kind = CopyKind::kHostToDevice) {
  return CopyRequest{to.data(), from.data(), from.size(), kind};
}

}  // namespace

TEST_CASE("the fake copies bytes and fires each callback once, on its worker", "[copy_engine]") {
  FakeCopyEngine engine;
  std::vector<std::byte> from(4096, std::byte{0x5a});
  std::vector<std::byte> to(4096);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> onCaller{false};
  Outcome outcome;
  auto inner = outcome.callback();
  engine.copy(request(to, from), [&](Status s) {
    onCaller = std::this_thread::get_id() == caller;
    inner(std::move(s));
  });
  auto ticket = CopyTicket::start(engine, request(to, from, CopyKind::kDeviceToHost));
  REQUIRE(ticket->wait(Clock::now() + 5s).isOk());
  CHECK(outcome.calls == 1);  // the engine runs copies in order
  CHECK(outcome.get().isOk());
  CHECK_FALSE(onCaller);
  CHECK(to == from);
  CHECK(engine.copiesSucceeded() == 2);
  CHECK(engine.bytesCopied() == 8192);
}

TEST_CASE("a zero-length copy succeeds and a null range is refused, both at once",
          "[copy_engine]") {
  FakeCopyEngine engine;
  Outcome empty;
  engine.copy(CopyRequest{nullptr, nullptr, 0, CopyKind::kDeviceToDevice}, empty.callback());
  CHECK(empty.calls == 1);
  CHECK(empty.get().isOk());
  Outcome null;
  std::vector<std::byte> buffer(16);
  engine.copy(CopyRequest{nullptr, buffer.data(), 16, CopyKind::kHostToDevice}, null.callback());
  CHECK(null.calls == 1);
  CHECK(null.get().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(null.get().message(), Catch::Contains("host to device, 16 bytes"));
}

TEST_CASE("the fake's delay and bandwidth make copies take time", "[copy_engine]") {
  FakeCopyEngine engine(FakeCopyOptions{2ms, 100e6});  // 1 MB at 100 MB/s: 10 ms
  std::vector<std::byte> from(1000000, std::byte{1});
  std::vector<std::byte> to(from.size());
  const auto began = Clock::now();
  REQUIRE(CopyTicket::start(engine, request(to, from))->wait(Clock::now() + 5s).isOk());
  CHECK(Clock::now() - began >= 12ms);
  CHECK_THAT(engine.describe(), Catch::Contains("2000 us per copy"));
}

TEST_CASE("an injected failure fails that copy only, copying nothing", "[copy_engine]") {
  FakeCopyEngine engine;
  engine.failCopy(1, transportError("injected"));
  std::vector<std::byte> from(64, std::byte{7});
  std::vector<std::byte> a(64), b(64), c(64);
  auto first = CopyTicket::start(engine, request(a, from));
  auto second = CopyTicket::start(engine, request(b, from));
  auto third = CopyTicket::start(engine, request(c, from));
  CHECK(first->wait(Clock::now() + 5s).isOk());
  const Status failed = second->wait(Clock::now() + 5s);
  CHECK(failed.code() == StatusCode::kTransportError);
  CHECK(failed.message() == "injected");
  CHECK(third->wait(Clock::now() + 5s).isOk());
  CHECK(b == std::vector<std::byte>(64));
  CHECK(c == from);
}

TEST_CASE("close fails queued copies, refuses new ones, and waits for the running one",
          "[copy_engine]") {
  std::atomic<int> started{0};
  FakeCopyOptions options;
  options.perCopyDelay = 10s;  // a copy runs until close interrupts it
  options.observer = [&](const FakeCopyEvent& e) {
    if (e.phase == FakeCopyEvent::Phase::kStart) ++started;
  };
  FakeCopyEngine engine(options);
  std::vector<std::byte> from(64, std::byte{9});
  std::vector<std::vector<std::byte>> to(3, std::vector<std::byte>(64));
  Outcome outcomes[3];
  for (int i = 0; i < 3; ++i) engine.copy(request(to[i], from), outcomes[i].callback());
  while (started == 0) std::this_thread::sleep_for(1ms);
  const auto began = Clock::now();
  engine.close();
  CHECK(Clock::now() - began < 5s);
  for (int i = 0; i < 3; ++i) {
    INFO("copy " << i);
    CHECK(outcomes[i].calls == 1);  // all reported before close returned
    CHECK(outcomes[i].get().code() == StatusCode::kCancelled);
    CHECK(to[i] == std::vector<std::byte>(64));  // nothing written
  }
  CHECK_THAT(outcomes[0].get().message(), Catch::Contains("closed while it ran"));
  CHECK_THAT(outcomes[1].get().message(), Catch::Contains("not started"));
  Outcome late;
  engine.copy(request(to[0], from), late.callback());
  CHECK(late.calls == 1);
  CHECK_THAT(late.get().message(), Catch::Contains("copy engine is closed"));
  engine.close();  // idempotent
}

TEST_CASE("a callback may chain the next copy, and close from a callback does not hang",
          "[copy_engine]") {
  FakeCopyEngine engine;
  std::vector<std::byte> from(128, std::byte{3});
  std::vector<std::byte> to(128);
  std::atomic<int> chained{0};
  std::atomic<int> failures{0};
  std::function<void(Status)> next = [&](Status s) {
    if (!s.isOk()) ++failures;  // no Catch2 assertion off the test's thread
    if (++chained < 10) {
      engine.copy(request(to, from), next);
    } else {
      engine.close();
    }
  };
  engine.copy(request(to, from), next);
  const auto deadline = Clock::now() + 5s;
  while (chained < 10 && Clock::now() < deadline) std::this_thread::sleep_for(1ms);
  CHECK(chained == 10);
  CHECK(failures == 0);
  Outcome after;
  engine.copy(request(to, from), after.callback());
  CHECK(after.get().code() == StatusCode::kCancelled);
}

TEST_CASE("the fake's memcpys are counted as emulated copy-engine CPU", "[copy_engine]") {
  FakeCopyEngine engine;
  // Touched first, so that the copy's CPU is the memcpy, not page faults of the caller.
  std::vector<std::byte> from(64u << 20, std::byte{0x11});
  std::vector<std::byte> to(64u << 20, std::byte{0});
  const std::chrono::nanoseconds before = emulatedCopyCpu();
  Outcome outcome;
  engine.copy(request(to, from), outcome.callback());
  const auto deadline = Clock::now() + 10s;
  while (outcome.calls.load() == 0 && Clock::now() < deadline) std::this_thread::sleep_for(1ms);
  REQUIRE(outcome.calls.load() == 1);
  REQUIRE(outcome.get().isOk());
  // 64 MiB is milliseconds of memcpy on any machine; an uncounted copy adds nothing.
  CHECK(emulatedCopyCpu() - before >= 100us);
}
