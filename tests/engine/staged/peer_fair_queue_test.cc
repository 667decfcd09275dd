// kvx-test-labels: unit
// PeerFairQueue: round-robin across peers, arrival order within a peer, a departed peer's
// items dropped.
#include "engine/staged/peer_fair_queue.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using kvx::engine::PeerFairQueue;

namespace {

std::vector<std::string> drain(PeerFairQueue<std::string>& queue) {
  std::vector<std::string> out;
  while (!queue.empty()) {
    out.push_back(queue.frontPeer() + ":" + queue.front());
    queue.pop();
  }
  return out;
}

}  // namespace

TEST_CASE("a peer that queued first and most gets one turn per round", "[staged]") {
  PeerFairQueue<std::string> queue;
  for (const char* id : {"1", "2", "3", "4"}) queue.push("a", id);
  queue.push("b", "1");
  queue.push("c", "1");
  queue.push("b", "2");
  CHECK(queue.size() == 7);
  CHECK(queue.sizeOf("a") == 4);
  CHECK(queue.sizeOf("b") == 2);
  CHECK(queue.sizeOf("nobody") == 0);
  CHECK(drain(queue) == std::vector<std::string>{"a:1", "b:1", "c:1", "a:2", "b:2", "a:3", "a:4"});
}

TEST_CASE("the head stays until it is popped, and a peer joining later waits one round",
          "[staged]") {
  PeerFairQueue<std::string> queue;
  queue.push("a", "1");
  queue.push("a", "2");
  CHECK(queue.front() == "1");
  CHECK(queue.front() == "1");  // not served: still first (no slot was free)
  queue.pop();
  queue.push("b", "1");  // b joins behind a, whose turn came back
  CHECK(drain(queue) == std::vector<std::string>{"a:2", "b:1"});
  queue.push("c", "1");  // an emptied queue starts over
  CHECK(drain(queue) == std::vector<std::string>{"c:1"});
}

TEST_CASE("a departed peer's requests are dropped and the others keep their turns", "[staged]") {
  PeerFairQueue<std::string> queue;
  queue.push("a", "1");
  queue.push("b", "1");
  queue.push("a", "2");
  queue.push("c", "1");
  queue.eraseOf("a");
  queue.eraseOf("nobody");
  CHECK(queue.size() == 2);
  CHECK(queue.sizeOf("a") == 0);
  CHECK(drain(queue) == std::vector<std::string>{"b:1", "c:1"});
}
