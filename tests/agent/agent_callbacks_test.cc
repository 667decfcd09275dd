// kvx-test-labels: unit
// kvx::Agent completion callbacks and the notification handler.
#include <atomic>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "examples/pair_transfer/pattern.h"
#include "kvx/agent.h"
#include "tests/support/test_agent.h"

using namespace kvx;
using kvx::test::makeAgent;
using namespace std::chrono_literals;

namespace {

// Collects values handed over from another thread.
template <typename T>
class Mailbox {
 public:
  // Notifies under the lock: a waiter that sees the value may destroy the mailbox at once,
  // so put() must not touch cv_ after releasing mutex_.
  void put(T value) {
    std::lock_guard lock(mutex_);
    values_.push_back(std::move(value));
    cv_.notify_all();
  }
  bool waitFor(std::size_t count) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, 5s, [&] { return values_.size() >= count; });
  }
  std::vector<T> values() {
    std::lock_guard lock(mutex_);
    return values_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<T> values_;
};

struct Pair {
  std::unique_ptr<Agent> a, b;
  std::vector<std::uint8_t> src = std::vector<std::uint8_t>(1 << 16);
  std::vector<std::uint8_t> dst = std::vector<std::uint8_t>(1 << 16);
  RegionId local, remote;

  explicit Pair(const std::string& transport)
      : a(makeAgent("cb-a", transport)), b(makeAgent("cb-b", transport)) {
    pair_transfer::fillPattern(src, 0, 3);
    local = a->registerMemory({"src", src.data(), src.size()}).value();
    remote = b->registerMemory({"dst", dst.data(), dst.size()}).value();
    REQUIRE(a->connect(b->listenAddress()).isOk());
  }
  TransferRequest write(std::uint64_t offset, std::uint64_t length,
                        std::optional<std::string> note = std::nullopt) const {
    return {"cb-b",
            TransferOp::kWrite,
            {{{local, offset, length}, {remote, offset, length}}},
            std::move(note)};
  }
};

}  // namespace

TEST_CASE("a post callback fires once per post, after the data is in place", "[agent]") {
  const std::string transport = GENERATE("inproc", "tcp");
  Pair pair(transport);
  Mailbox<std::pair<TransferId, TransferStatus>> finished;
  auto id = pair.a->createTransfer(pair.write(0, pair.src.size()));
  REQUIRE(id.isOk());
  REQUIRE(pair.a->post(*id,
                       [&](TransferId t, const TransferStatus& s) {
                         finished.put({t, s});
                       })
              .isOk());
  REQUIRE(finished.waitFor(1));
  CHECK(finished.values()[0].first == *id);
  CHECK(finished.values()[0].second.state == TransferState::kDone);
  CHECK(pair.src == pair.dst);
  // A repost gets its own callback; the first one is not called again.
  REQUIRE(pair.a->post(*id,
                       [&](TransferId t, const TransferStatus& s) {
                         finished.put({t, s});
                       })
              .isOk());
  REQUIRE(finished.waitFor(2));
  std::this_thread::sleep_for(50ms);
  CHECK(finished.values().size() == 2);
}

TEST_CASE("a post callback reports failure and may call back into the agent", "[agent]") {
  Pair pair("inproc");
  Mailbox<TransferStatus> finished;
  auto id = pair.a->createTransfer(pair.write(0, 4096));
  REQUIRE(id.isOk());
  Agent& agent = *pair.a;
  // Written by the callback before put(), read after waitFor(): the mailbox's lock orders it.
  // Catch2 assertions are not thread-safe, so the callback only records what it saw.
  bool pollAgreed = false;
  REQUIRE(pair.a
              ->post(*id,
                     [&](TransferId t, const TransferStatus& s) {
                       // Re-entering the agent from the callback must not deadlock.
                       pollAgreed = agent.poll(t).state == s.state;
                       finished.put(s);
                     })
              .isOk());
  REQUIRE(finished.waitFor(1));
  CHECK(pollAgreed);
  // A failing post: the peer is gone by the time it is posted.
  auto failing = pair.a->createTransfer(pair.write(0, 4096));
  REQUIRE(failing.isOk());
  REQUIRE(pair.a->disconnect("cb-b").isOk());
  bool called = false;
  CHECK_FALSE(
      pair.a->post(*failing, [&](TransferId, const TransferStatus&) { called = true; }).isOk());
  CHECK_FALSE(called);
}

TEST_CASE("the notification handler receives notifications in order", "[agent]") {
  const std::string transport = GENERATE("inproc", "tcp");
  Pair pair(transport);
  Mailbox<Notification> received;
  REQUIRE(pair.a->sendNotification("cb-b", "queued before the handler").isOk());
  REQUIRE(pair.b->waitNotification(deadlineIn(5s)).isOk());
  pair.b->setNotificationHandler([&](Notification n) { received.put(std::move(n)); });
  for (int i = 0; i < 100; ++i) {
    REQUIRE(pair.a->sendNotification("cb-b", "n" + std::to_string(i)).isOk());
  }
  REQUIRE(received.waitFor(100));
  auto values = received.values();
  for (int i = 0; i < 100; ++i) {
    CHECK(values[i].peer == "cb-a");
    CHECK(values[i].payload == "n" + std::to_string(i));
  }
  CHECK(pair.b->takeNotifications().empty());
  // Removing the handler restores the queue.
  pair.b->setNotificationHandler(nullptr);
  REQUIRE(pair.a->sendNotification("cb-b", "queued again").isOk());
  auto n = pair.b->waitNotification(deadlineIn(5s));
  REQUIRE(n.isOk());
  CHECK(n->payload == "queued again");
}
