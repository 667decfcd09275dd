// kvx-test-labels: unit ucx
// The UCX transport's thread setup (Transport::setThreadSetup): it runs on a thread before that
// thread's first call into UCX, once it succeeded it is not asked again on that thread, and
// each thread gets its own. A UCX built with CUDA needs this to find a CUDA context on the
// threads that post and progress (engine.cc binds the device's).
#include <catch2/catch.hpp>
#include <map>
#include <mutex>
#include <thread>

#include "engine/transport/transport_registry.h"

namespace kvx::engine {
namespace {

std::unique_ptr<Transport> makeShmTransport() {
  TransportOptions options;
  options.agentName = "setup";
  options.transports = "shm";
  auto transport = createTransport("ucx", options);
  REQUIRE(transport.isOk());
  return std::move(transport).value();
}

TEST_CASE("ucx thread setup: once per thread, before its first UCX call", "[ucx]") {
  auto transport = makeShmTransport();
  std::mutex mutex;
  std::map<std::thread::id, int> calls;
  transport->setThreadSetup([&] {
    std::lock_guard lock(mutex);
    ++calls[std::this_thread::get_id()];
    return true;
  });
  transport->progress();
  transport->progress();
  std::thread other([&] {
    transport->progress();
    std::vector<std::uint8_t> host(4096);
    auto memory = transport->registerMemory(host.data(), host.size(), MemoryKind::kHost, -1);
    CHECK(memory.isOk());
  });
  other.join();
  std::lock_guard lock(mutex);
  REQUIRE(calls.size() == 2);
  for (const auto& [thread, count] : calls) CHECK(count == 1);
}

TEST_CASE("ucx thread setup: asked again while it has nothing to do", "[ucx]") {
  auto transport = makeShmTransport();
  int calls = 0;
  bool ready = false;
  transport->setThreadSetup([&] {
    ++calls;
    return ready;
  });
  transport->progress();
  transport->progress();
  CHECK(calls == 2);
  ready = true;
  transport->progress();
  transport->progress();
  CHECK(calls == 3);
}

}  // namespace
}  // namespace kvx::engine
