// kvx-test-labels: unit
// The KV handshake as a peer sees it, with the other side a bare kvx::Agent speaking the
// hand-off protocol by hand, so that the test decides what each hello says and when:
//  - the session a hello carries: a peer that dropped its requests with a decode agent and
//    says hello again with a new session ends the old session's requests there at once, even
//    though the decode agent saw no link close (under loss, the peer's new connection can
//    come up before its old one is seen to go); a hello repeating the session, or from an
//    agent that does not say one, changes nothing;
//  - connects to one address take turns, so that two (the user's and the reconnector's)
//    never share, and drop, one half-made connection.
#include <catch2/catch.hpp>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <variant>

#include "kv/handoff/kv_message.h"
#include "kv/pool/model_shape.h"
#include "kvx/kv_agent.h"
#include "tests/support/test_agent.h"

using namespace kvx;
using namespace kvx::kv::handoff;
using namespace std::chrono_literals;
namespace kv = kvx::kv;

namespace {

const char* kTinyShape =
    R"({"name":"tiny","layers":4,"kvHeads":2,"headDim":16,"dtypeBytes":2,"tokensPerBlock":4})";
constexpr std::uint64_t kBlocks = 64;

std::unique_ptr<KvAgent> makeDecode(const std::string& transport) {
  KvAgentOptions options;
  options.agent = kvx::test::agentOptions("decode", transport);
  options.role = KvRole::kDecode;
  options.pool.model = kTinyShape;
  options.pool.blocks = kBlocks;
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
  pool.blocks = kBlocks;
  for (std::uint32_t t = 0; t < pool.shape.layers; ++t)
    pool.tensorRegions.push_back(RegionId(t + 1));
  return pool;
}

// A prefill agent by hand: its hellos say what the test wants. Its pool is never addressed
// (it pushes, so the decode agent does not ready it), so its regions need not exist.
class HandPrefill {
 public:
  explicit HandPrefill(const std::string& transport)
      : agent_(kvx::test::makeAgent("prefill", transport)) {}

  Agent& agent() { return *agent_; }

  void connect(KvAgent& decode) {
    auto peer = agent_->connect(decode.listenAddress());
    REQUIRE(peer.isOk());
    REQUIRE(*peer == "decode");
  }

  // Says hello with `session` (0: none) and returns the decode agent's reply.
  HelloMsg hello(std::uint64_t session) {
    HelloMsg m{KvRole::kPrefill, tinyPool(), kBlocks, false, KvMode::kPush};
    m.session = session;
    send(m);
    HelloMsg reply = receive<HelloMsg>();
    CHECK(reply.reply);
    return reply;
  }

  // Places a PUSH request of `blocks` blocks; returns the decode agent's answer.
  PlacedMsg place(const std::string& id, std::uint64_t blocks) {
    send(PlaceMsg{id, blocks * 4, blocks, {}, KvMode::kPush, false, 30000, {}});
    return receive<PlacedMsg>();
  }

  void send(const KvMessage& message) {
    REQUIRE(agent_->sendNotification("decode", encode(message)).isOk());
  }

  // The next message of type T from the decode agent (capacity updates are skipped).
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

// A decode agent, and a hand-made prefill agent connected to it that said hello with
// `session`; `first` is the decode agent's reply.
struct InSession {
  InSession(const std::string& transport, std::uint64_t session)
      : decode(makeDecode(transport)), prefill(transport) {
    prefill.connect(*decode);
    first = prefill.hello(session);
  }
  std::unique_ptr<KvAgent> decode;
  HandPrefill prefill;
  HelloMsg first;
};

bool eventually(const std::function<bool()>& done) {
  const auto until = Clock::now() + 5s;
  while (!done() && Clock::now() < until) std::this_thread::sleep_for(5ms);
  return done();
}

}  // namespace

TEST_CASE("a hello with a new session ends the old session's requests at once", "[kv]") {
  const std::string transport = GENERATE("inproc", "tcp");
  InSession s(transport, 1);
  CHECK(s.first.session != 0);

  const PlacedMsg placed = s.prefill.place("old", 4);
  REQUIRE(placed.blocks.size() >= 1);
  CHECK(s.decode->usage().freeBlocks == kBlocks - 4);

  // The prefill side forgot "old" (as when its data path to the decode agent failed) and
  // starts over on the same control link: nothing closed on the decode side.
  const auto start = Clock::now();
  const HelloMsg second = s.prefill.hello(2);
  CHECK(second.session != s.first.session);  // the decode agent started over too
  REQUIRE(eventually([&] { return s.decode->usage().freeBlocks == kBlocks; }));
  CHECK(Clock::now() - start < 5s);  // not the 30 s lease
  auto old = s.decode->status("old");
  REQUIRE(old.isOk());
  CHECK(old->state == KvRequestState::kFailed);
  CHECK(old->status.code() == StatusCode::kPeerFailed);
  CHECK_THAT(old->status.message(), Catch::Contains("started a new one"));

  // The new session works.
  const PlacedMsg again = s.prefill.place("new", 2);
  CHECK(again.req == "new");
  checkCompletes(s.prefill, *s.decode, "new");
}

TEST_CASE("a hello repeating the session, or saying none, keeps the session's requests", "[kv]") {
  const std::string transport = GENERATE("inproc", "tcp");
  InSession s(transport, 7);

  s.prefill.place("kept", 4);
  // A connect() to a peer already in session says hello again with the same session; an
  // older agent says none at all.
  const std::uint64_t session = GENERATE(7, 0);
  const HelloMsg again = s.prefill.hello(session);
  CHECK(again.session == s.first.session);
  CHECK(s.decode->usage().freeBlocks == kBlocks - 4);
  auto kept = s.decode->status("kept");
  REQUIRE(kept.isOk());
  CHECK(kept->state != KvRequestState::kFailed);

  // And the request still completes in that session.
  checkCompletes(s.prefill, *s.decode, "kept");
}

TEST_CASE("connects to one address take turns", "[kv]") {
  const std::string transport = GENERATE("inproc", "tcp");
  // The hand-made prefill agent notes when each hello arrives and answers it 300 ms later,
  // from a thread of its own (the notification handler takes one at a time). Declared first:
  // the handler and the thread use it until the agent is gone.
  std::mutex mutex;
  std::condition_variable arrived;
  std::vector<Clock::time_point> hellos, replies;
  std::vector<std::string> askers;
  bool stop = false;
  auto decode = makeDecode(transport);
  HandPrefill prefill(transport);
  std::thread responder([&] {
    std::unique_lock lock(mutex);
    while (true) {
      arrived.wait(lock, [&] { return stop || replies.size() < askers.size(); });
      if (stop) return;
      const std::size_t i = replies.size();
      const auto due = hellos[i] + 300ms;
      const std::string peer = askers[i];
      lock.unlock();
      std::this_thread::sleep_until(due);
      HelloMsg reply{KvRole::kPrefill, tinyPool(), kBlocks, true, KvMode::kPush};
      reply.session = 1;
      // When the reply leaves, read before sending it: a hello sent because of this reply
      // arrives after it. Read after, it may not: the whole round trip can finish before this
      // thread runs again (seen on 2 busy cores).
      const auto sent = Clock::now();
      (void)prefill.agent().sendNotification(peer, encode(reply));
      lock.lock();
      replies.push_back(sent);
    }
  });
  prefill.agent().setNotificationHandler([&](Notification n) {
    auto message = kvx::kv::handoff::decode(n.payload);
    if (!message.isOk() || !std::holds_alternative<HelloMsg>(*message)) return;
    {
      std::lock_guard lock(mutex);
      hellos.push_back(Clock::now());
      askers.push_back(n.peer);
    }
    arrived.notify_all();
  });
  const auto stopResponder = [&] {
    {
      std::lock_guard lock(mutex);
      stop = true;
    }
    arrived.notify_all();
    responder.join();
  };

  const std::string address = prefill.agent().listenAddress();
  auto first =
      std::async(std::launch::async, [&] { return decode->connect(address, deadlineIn(5s)); });
  auto second =
      std::async(std::launch::async, [&] { return decode->connect(address, deadlineIn(5s)); });
  auto a = first.get();
  auto b = second.get();
  // A connect to a peer already in session returns without waiting for its own reply, so
  // the second answer may still be on its way.
  const bool answered = eventually([&] {
    std::lock_guard lock(mutex);
    return replies.size() == 2;
  });
  stopResponder();
  INFO((a.isOk() ? "ok" : a.status().toString())
       << " / " << (b.isOk() ? "ok" : b.status().toString()));
  REQUIRE(a.isOk());
  REQUIRE(b.isOk());
  CHECK(*a == "prefill");
  CHECK(*b == "prefill");
  REQUIRE(answered);
  std::lock_guard lock(mutex);
  REQUIRE(hellos.size() == 2);
  // The second connect said hello only once the first one had its answer: at once, both
  // hellos would have arrived before the first answer.
  CHECK(hellos[1] >= replies[0]);
}
