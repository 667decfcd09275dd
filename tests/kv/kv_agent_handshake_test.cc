// kvx-test-labels: unit
// The KV handshake as a peer sees it. It is the agent's own handshake: a KV agent's role and
// pool travel in its metadata (kv/handoff/kv_agent_info.h). Here the other side is a bare
// kvx::Agent that describes itself as a prefill agent by hand and speaks the hand-off
// protocol by hand, so that the test decides when it drops its session:
//  - a peer that dropped its requests with a decode agent and connects again ends the old
//    session's requests there at once, although the decode agent saw no link close (under
//    loss, the peer's new connection can come up before its old one is seen to go);
//  - a peer that connects again keeping its session keeps its requests.
#include <atomic>
#include <catch2/catch.hpp>
#include <functional>
#include <thread>
#include <variant>

#include "agent/agent_impl.h"
#include "kv/handoff/kv_agent_info.h"
#include "kv/handoff/kv_message.h"
#include "kv/pool/kv_pool.h"
#include "kv/pool/model_shape.h"
#include "kvx/kv_agent.h"
#include "tests/kv/tiny_models.h"
#include "tests/support/eventually.h"
#include "tests/support/test_agent.h"

using namespace kvx;
using namespace kvx::kv::handoff;
using kvx::test::eventually;
using kvx::test::kTinyShape;
using namespace std::chrono_literals;
namespace kv = kvx::kv;

namespace {

constexpr std::uint64_t kHandshakeBlocks = 64;

std::unique_ptr<KvAgent> makeDecode(const std::string& transport) {
  KvAgentOptions options;
  options.agent = kvx::test::agentOptions("decode", transport);
  options.role = KvRole::kDecode;
  options.pool.model = kTinyShape;
  options.pool.blocks = kHandshakeBlocks;
  options.requestTimeout = 30s;
  options.leaseTimeout = 30s;  // far beyond the test: only the session may free the blocks
  auto agent = KvAgent::create(options);
  REQUIRE(agent.isOk());
  return std::move(agent).value();
}

kv::PoolDescription tinyPool() {
  kv::PoolDescription pool;
  pool.shape = kv::shapeFromJson(kTinyShape).value();
  pool.layout = kv::KvLayout::kNHD;
  pool.blocks = kHandshakeBlocks;
  for (std::uint32_t t = 0; t < pool.shape.layers; ++t)
    pool.tensorRegions.push_back(RegionId(t + 1));
  return pool;
}

// A prefill agent by hand: its metadata says it is one, with the tiny pool (regions named
// as a KvPool names them; never addressed, since it pushes).
class HandPrefill {
 public:
  explicit HandPrefill(const std::string& transport) {
    AgentOptions options = kvx::test::agentOptions("prefill", transport);
    const kv::PoolDescription pool = tinyPool();
    kv::handoff::KvAgentInfo info{KvRole::kPrefill, KvMode::kPush, pool.shape,
                                  pool.layout,      pool.blocks,   {}};
    for (std::uint32_t t = 0; t < pool.tensorRegions.size(); ++t) {
      info.regionNames.push_back(kv::KvPool::regionName(t));
    }
    options.applicationInfo = kv::handoff::encodeKvAgentInfo(info);
    auto made = Agent::create(options);
    REQUIRE(made.isOk());
    agent_ = std::move(made).value();
    const auto layout = kv::PoolLayout::create(pool.shape, pool.layout, pool.blocks);
    REQUIRE(layout.isOk());
    for (const std::string& name : info.regionNames) {
      AllocationSpec spec;
      spec.name = name;
      spec.length = layout->tensorBytes();
      REQUIRE(agent_->allocateMemory(spec).isOk());
    }
  }

  Agent& agent() { return *agent_; }

  // Connects (again) to the decode agent; the decode agent tells its free blocks.
  void connect(KvAgent& decode) {
    auto peer = agent_->connect(decode.listenAddress());
    REQUIRE(peer.isOk());
    REQUIRE(*peer == "decode");
    receive<CapacityMsg>();
  }

  // Forgets the decode agent on its data path only, as when that failed: its control link
  // stays up, so the decode agent sees nothing close.
  void dropDecode() {
    REQUIRE(agent::engineOf(*agent_)
                .removePeer("decode", peerFailed("the data path failed (test)"))
                .isOk());
  }

  // Places a PUSH request of `blocks` blocks; returns the decode agent's answer.
  PlacedMsg place(const std::string& id, std::uint64_t blocks) {
    send(PlaceMsg{id, blocks * 4, blocks, {}, KvMode::kPush, false, 30000, {}});
    return receive<PlacedMsg>();
  }

  void send(const KvMessage& message) {
    REQUIRE(agent_->sendNotification("decode", encode(message)).isOk());
  }

  // The next message of type T from the decode agent (other capacity updates are skipped).
  template <typename T>
  T receive() {
    const auto until = deadlineIn(5s);
    while (true) {
      auto n = agent_->waitNotification(until);
      REQUIRE(n.isOk());
      auto message = decode(n->payload);
      REQUIRE(message.isOk());
      if (auto* wanted = std::get_if<T>(&*message)) return *wanted;
      REQUIRE(std::holds_alternative<CapacityMsg>(*message));
    }
  }

 private:
  std::unique_ptr<Agent> agent_;
};

// The prefill side says the placed request `id`'s data is in place: the decode agent hands
// it to the server, which releases it.
void checkCompletes(HandPrefill& prefill, KvAgent& decode, const std::string& id) {
  prefill.send(DataMsg{id, kAllLayers});
  auto arrival = decode.nextArrival(deadlineIn(5s));
  REQUIRE(arrival.isOk());
  CHECK(arrival->id == id);
  CHECK(decode.release(id).isOk());
}

// A decode agent, and a hand-made prefill agent connected to it.
struct InSession {
  explicit InSession(const std::string& transport)
      : decode(makeDecode(transport)), prefill(transport) {
    prefill.connect(*decode);
  }
  std::unique_ptr<KvAgent> decode;
  HandPrefill prefill;
};

}  // namespace

TEST_CASE("a peer that dropped its session and connects again ends it at once", "[kv]") {
  // In-process: dropping the data path tells the decode agent nothing, so only the new
  // handshake can (over tcp it may hear of it from its own data path first).
  InSession s("inproc");

  const PlacedMsg placed = s.prefill.place("old", 4);
  REQUIRE(placed.blocks.size() >= 1);
  CHECK(s.decode->usage().freeBlocks == kHandshakeBlocks - 4);

  // The prefill side forgot "old" (as when its data path to the decode agent failed) and
  // connects again while its old control link is still up: nothing closed on the decode side.
  const auto start = Clock::now();
  s.prefill.dropDecode();
  s.prefill.connect(*s.decode);
  REQUIRE(eventually([&] { return s.decode->usage().freeBlocks == kHandshakeBlocks; }));
  CHECK(Clock::now() - start < 5s);  // not the 30 s lease
  auto old = s.decode->status("old");
  REQUIRE(old.isOk());
  CHECK(old->state == KvRequestState::kFailed);
  CHECK(old->status.code() == StatusCode::kPeerFailed);
  CHECK_THAT(old->status.message(), Catch::Contains("without the state of its session"));

  // The new session works.
  const PlacedMsg again = s.prefill.place("new", 2);
  CHECK(again.req == "new");
  checkCompletes(s.prefill, *s.decode, "new");
}

TEST_CASE("a peer that connects again keeping its session keeps its requests", "[kv]") {
  const std::string transport = GENERATE("inproc", "tcp");
  InSession s(transport);

  s.prefill.place("kept", 4);
  // A second control link of a peer that still holds the decode agent: the same session.
  auto again = s.prefill.agent().connect(s.decode->listenAddress());
  REQUIRE(again.isOk());
  std::this_thread::sleep_for(100ms);
  CHECK(s.decode->usage().freeBlocks == kHandshakeBlocks - 4);
  auto kept = s.decode->status("kept");
  REQUIRE(kept.isOk());
  CHECK(kept->state != KvRequestState::kFailed);

  // And the request still completes in that session.
  checkCompletes(s.prefill, *s.decode, "kept");
}

TEST_CASE("a message sent before the connecting agent took the peer in waits for it", "[kv]") {
  // The decode agent connects to the hand-made prefill agent, which places a request the
  // moment it takes the decode agent in: on its channel thread, before it even answers the
  // handshake, so the request reaches the decode agent before the decode agent's own join
  // event for the prefill agent does.
  auto decode = makeDecode("inproc");
  HandPrefill prefill("inproc");
  std::atomic<bool> sent{false};
  prefill.agent().setPeerEventHandler([&](const PeerEvent& event) {
    if (event.kind != PeerEvent::Kind::kJoined) return;
    const PlaceMsg place{"early", 8, 2, {}, KvMode::kPush, false, 30000, {}};
    sent = prefill.agent().sendNotification(event.peer, encode(place)).isOk();
  });
  REQUIRE(decode->connect(prefill.agent().listenAddress(), deadlineIn(5s)).isOk());
  REQUIRE(sent.load());
  const PlacedMsg placed = prefill.receive<PlacedMsg>();
  CHECK(placed.req == "early");
  checkCompletes(prefill, *decode, "early");
}
