// kvx-test-labels: unit
// kvx::Agent end to end in one process: control channel, metadata updates, blobs, bad input.
#include "kvx/agent.h"

#include <catch2/catch.hpp>
#include <thread>

#include "examples/pair_transfer/pattern.h"
#include "tests/support/eventually.h"
#include "tests/support/test_agent.h"

using namespace kvx;
using kvx::test::eventually;
using kvx::test::makeAgent;
using namespace std::chrono_literals;

TEST_CASE("agents connect over the control channel and move data", "[agent]") {
  const std::string transport = GENERATE("inproc", "tcp");
  auto prefill = makeAgent("prefill", transport);
  auto decode = makeAgent("decode", transport);
  std::vector<std::uint8_t> src(1 << 16), dst(1 << 16);
  pair_transfer::fillPattern(src, 0, 5);
  RegionId local = prefill->registerMemory({"src", src.data(), src.size()}).value();
  decode->registerMemory({"dst", dst.data(), dst.size()}).value();

  auto peer = prefill->connect(decode->listenAddress());
  REQUIRE(peer.isOk());
  CHECK(*peer == "decode");
  // The handshake told both sides about each other.
  REQUIRE(eventually([&] { return decode->peerInfo("prefill").isOk(); }));
  auto info = prefill->peerInfo("decode");
  REQUIRE(info.isOk());
  REQUIRE(info->regions.size() == 1);
  CHECK(info->regions[0].name == "dst");
  CHECK(info->regions[0].length == dst.size());
  CHECK_FALSE(prefill->dataPathDescription("decode")->empty());

  TransferRequest request{"decode",
                          TransferOp::kWrite,
                          {{{local, 0, src.size()}, {info->regions[0].id, 0, src.size()}}},
                          "kv ready"};
  auto id = prefill->submit(request);
  REQUIRE(id.isOk());
  auto note = decode->waitNotification(deadlineIn(5s));
  REQUIRE(note.isOk());
  CHECK(note->peer == "prefill");
  CHECK(note->payload == "kv ready");
  CHECK(src == dst);
  CHECK(prefill->wait(*id, deadlineIn(5s)).isOk());
}

TEST_CASE("region changes reach connected peers", "[agent]") {
  auto a = makeAgent("a", "inproc");
  auto b = makeAgent("b", "inproc");
  REQUIRE(a->connect(b->listenAddress()).isOk());
  std::vector<std::uint8_t> buffer(4096);
  RegionId id = b->registerMemory({"late", buffer.data(), buffer.size()}).value();
  CHECK(eventually([&] { return a->peerInfo("b")->regions.size() == 1; }));
  std::vector<std::uint8_t> other(64);
  // Regions not marked exposed never reach peers.
  REQUIRE(b->registerMemory({"hidden", other.data(), other.size(), MemoryKind::kHost, -1, false})
              .isOk());
  REQUIRE(b->deregisterMemory(id).isOk());
  CHECK(eventually([&] { return a->peerInfo("b")->regions.empty(); }));
}

TEST_CASE("a region name every handshake would refuse is refused at registration", "[agent]") {
  auto a = makeAgent("names-a", "inproc");
  auto b = makeAgent("names-b", "inproc");
  std::vector<std::uint8_t> buffer(4096);
  const std::string bad[] = {"line\nbreak", std::string("nul\0byte", 8), std::string(100000, 'x'),
                             ""};
  for (const std::string& name : bad) {
    auto region = a->registerMemory({name, buffer.data(), buffer.size()});
    REQUIRE_FALSE(region.isOk());
    CHECK(region.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(region.status().message(), Catch::Contains("region name: expected 1..256 bytes"));
    auto allocated = a->allocateMemory({name, 4096});
    CHECK(allocated.status().code() == StatusCode::kInvalidArgument);
  }
  // Nothing half-registered: the agent's metadata still passes a peer's handshake.
  REQUIRE(a->registerMemory({"fine", buffer.data(), buffer.size()}).isOk());
  auto peer = b->connect(a->listenAddress());
  REQUIRE(peer.isOk());
  CHECK(*peer == "names-a");
}

TEST_CASE("metadata blobs connect agents without a channel", "[agent]") {
  auto a = makeAgent("blob-a", "tcp");
  auto b = makeAgent("blob-b", "tcp");
  std::vector<std::uint8_t> src(8192), dst(8192);
  pair_transfer::fillPattern(src, 0, 9);
  RegionId local = a->registerMemory({"src", src.data(), src.size()}).value();
  RegionId remote = b->registerMemory({"dst", dst.data(), dst.size()}).value();
  auto blob = b->exportMetadata();
  REQUIRE(blob.isOk());
  auto name = a->loadPeerMetadata(*blob);
  REQUIRE(name.isOk());
  CHECK(*name == "blob-b");
  auto id = a->submit({"blob-b", TransferOp::kWrite, {{{local, 0, 8192}, {remote, 0, 8192}}}, {}});
  REQUIRE(id.isOk());
  REQUIRE(a->wait(*id, deadlineIn(5s)).isOk());
  CHECK(src == dst);

  std::vector<std::uint8_t> garbage = *blob;
  garbage[0] ^= 0xff;
  CHECK(a->loadPeerMetadata(garbage).status().code() == StatusCode::kProtocolError);
  CHECK(a->loadPeerMetadata(std::span<const std::uint8_t>(blob->data(), 5)).status().code() ==
        StatusCode::kProtocolError);
  // Its own blob is refused: an agent is not its own peer.
  CHECK_FALSE(a->loadPeerMetadata(*a->exportMetadata()).isOk());
}

TEST_CASE("an application's description of its agent reaches peers with the agent", "[agent]") {
  AgentOptions described = kvx::test::agentOptions("described", "inproc");
  described.applicationInfo = R"({"role": "decode", "note": "é"})";
  auto a = Agent::create(described);
  REQUIRE(a.isOk());
  auto b = makeAgent("plain", "inproc");
  // Through the handshake, both ways (the plain agent's is empty)...
  REQUIRE(b->connect((*a)->listenAddress()).isOk());
  CHECK(b->peerInfo("described")->applicationInfo == described.applicationInfo);
  REQUIRE(eventually([&] { return (*a)->peerInfo("plain").isOk(); }));
  CHECK((*a)->peerInfo("plain")->applicationInfo.empty());
  // ...and in a blob.
  auto c = makeAgent("blob-reader", "inproc");
  REQUIRE(c->loadPeerMetadata(*(*a)->exportMetadata()).isOk());
  CHECK(c->peerInfo("described")->applicationInfo == described.applicationInfo);

  AgentOptions tooLong = kvx::test::agentOptions("too-long", "inproc");
  tooLong.applicationInfo.assign(kMaxApplicationInfoBytes + 1, 'x');
  const Status refused = Agent::create(tooLong).status();
  CHECK(refused.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(refused.message(), Catch::Contains("applicationInfo: expected at most 65536 bytes"));
  AgentOptions notText = kvx::test::agentOptions("not-text", "inproc");
  notText.applicationInfo = "\xc3";
  CHECK_THAT(Agent::create(notText).status().message(),
             Catch::Contains("applicationInfo: expected valid UTF-8"));
}

TEST_CASE("bad input gets a clear error and the agent keeps serving", "[agent]") {
  auto a = makeAgent("bad-a", "inproc");
  auto b = makeAgent("bad-b", "inproc");
  CHECK(a->connect("127.0.0.1:1").status().code() == StatusCode::kPeerFailed);
  CHECK(a->connect("not an address").status().code() == StatusCode::kInvalidArgument);
  CHECK(a->submit({"nobody", TransferOp::kWrite, {{{RegionId(1), 0, 1}, {RegionId(1), 0, 1}}}, {}})
            .status()
            .code() == StatusCode::kNotFound);
  CHECK(a->deregisterMemory(RegionId(42)).code() == StatusCode::kNotFound);
  CHECK(Agent::create(AgentOptions{}).status().code() == StatusCode::kInvalidArgument);
  AgentOptions unknownTransport;
  unknownTransport.name = "x";
  unknownTransport.transport = "carrier-pigeon";
  CHECK(Agent::create(unknownTransport).status().code() == StatusCode::kNotFound);
  // A name peers would refuse is refused at creation, not at every connect after it.
  AgentOptions badName;
  badName.name = "a b/../c";
  badName.transport = "inproc";
  const Status refused = Agent::create(badName).status();
  CHECK(refused.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(refused.message(), Catch::Contains("agent name 'a b/../c' cannot be used") &&
                                    Catch::Contains("[A-Za-z0-9._-]"));
  // After all that, a real connection still works.
  CHECK(a->connect(b->listenAddress()).isOk());
}

TEST_CASE("disconnect fails pending work and forgets the peer on both sides", "[agent]") {
  auto a = makeAgent("d-a", "inproc");
  auto b = makeAgent("d-b", "inproc");
  REQUIRE(a->connect(b->listenAddress()).isOk());
  REQUIRE(eventually([&] { return b->peerInfo("d-a").isOk(); }));
  REQUIRE(a->disconnect("d-b").isOk());
  CHECK(a->peerInfo("d-b").status().code() == StatusCode::kNotFound);
  CHECK(eventually([&] { return !b->peerInfo("d-a").isOk(); }));
  CHECK(a->disconnect("d-b").code() == StatusCode::kNotFound);
}

TEST_CASE("a connect whose data path cannot be made leaves no control link behind", "[agent]") {
  // The control handshake succeeds, but the peers' transports differ: no data path.
  auto a = kvx::test::makeAgent("a", "inproc");
  auto b = kvx::test::makeAgent("b", "tcp");
  auto connected = a->connect(b->listenAddress(), deadlineIn(5s));
  REQUIRE_FALSE(connected.isOk());
  CHECK_THAT(connected.status().message(), Catch::Contains("transport"));
  CHECK(a->peers().empty());
  // b forgets a once the link a dropped closes.
  const Deadline deadline = deadlineIn(5s);
  while (!b->peers().empty() && Clock::now() < deadline) std::this_thread::sleep_for(10ms);
  CHECK(b->peers().empty());
}
