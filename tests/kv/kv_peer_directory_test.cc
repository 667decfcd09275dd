// kvx-test-labels: unit
#include "kv/kv_peer_directory.h"

#include <catch2/catch.hpp>
#include <thread>

using namespace kvx;
using namespace std::chrono_literals;

TEST_CASE("a connect waits for the service thread to take the peer in at its incarnation") {
  kv::KvPeerDirectory peers;
  std::atomic<bool> stop{false};
  CHECK(peers.waitFor("d", 7, deadlineIn(20ms), stop).status().code() == StatusCode::kTimedOut);

  std::thread service([&] {
    std::this_thread::sleep_for(20ms);
    peers.record("d", kv::KvPeer{.incarnation = 6,
                                 .compatible = true,
                                 .totalBlocks = 64,
                                 .kvHeads = 8});  // an older one
    std::this_thread::sleep_for(20ms);
    peers.record("d",
                 kv::KvPeer{.incarnation = 7, .compatible = true, .totalBlocks = 64, .kvHeads = 8});
  });
  auto found = peers.waitFor("d", 7, deadlineIn(5s), stop);
  service.join();
  REQUIRE(found.isOk());
  CHECK(found->incarnation == 7);
  CHECK(peers.compatible("d"));
  CHECK(peers.all().size() == 1);
  CHECK(peers.forget("d"));
  CHECK_FALSE(peers.forget("d"));
  CHECK_FALSE(peers.find("d"));
  CHECK_FALSE(peers.compatible("d"));
}

TEST_CASE("a waiting connect ends when the agent shuts down") {
  kv::KvPeerDirectory peers;
  std::atomic<bool> stop{false};
  std::thread shutdown([&] {
    std::this_thread::sleep_for(20ms);
    stop = true;
    peers.wakeAll();
  });
  const auto started = Clock::now();
  auto found = peers.waitFor("d", 1, deadlineIn(5s), stop);
  shutdown.join();
  CHECK(found.status().code() == StatusCode::kFailedPrecondition);
  CHECK(Clock::now() - started < 4s);
}
