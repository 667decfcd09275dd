// kvx-test-labels: unit
// Two kvx::Agents whose control channel runs over mutual TLS: they exchange metadata and a
// transfer with its notification goes through, exactly as over plain TCP.
#include <catch2/catch.hpp>
#include <thread>

#include "examples/pair_transfer/pattern.h"
#include "kvx/agent.h"
#include "tests/agent/channel/test_pki.h"
#include "tests/support/test_agent.h"

using namespace kvx;
using kvx::test::TestPki;
using kvx::test::TlsFileSet;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<Agent> makeTlsAgent(const std::string& name, const TlsFileSet& files) {
  AgentOptions options = kvx::test::agentOptions(name, "inproc");
  options.tls = {true, files.cert, files.key, files.ca};
  auto agent = Agent::create(options);
  REQUIRE(agent.isOk());
  return std::move(agent).value();
}

}  // namespace

TEST_CASE("agents with mutual TLS connect and move data", "[agent]") {
  TestPki pki;
  pki.makeCa("ca");
  auto prefill = makeTlsAgent("prefill", pki.issue("prefill", "ca"));
  auto decode = makeTlsAgent("decode", pki.issue("decode", "ca"));
  std::vector<std::uint8_t> src(1 << 16), dst(1 << 16);
  pair_transfer::fillPattern(src, 0, 7);
  RegionId local = prefill->registerMemory({"src", src.data(), src.size()}).value();
  decode->registerMemory({"dst", dst.data(), dst.size()}).value();

  auto peer = prefill->connect(decode->listenAddress());
  REQUIRE(peer.isOk());
  CHECK(*peer == "decode");
  auto info = prefill->peerInfo("decode");
  REQUIRE(info.isOk());
  REQUIRE(info->regions.size() == 1);

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
  CHECK(prefill->wait(*id, deadlineIn(5s)).isOk());
  CHECK(src == dst);
}

TEST_CASE("an agent without TLS cannot join agents that use it", "[agent]") {
  TestPki pki;
  pki.makeCa("ca");
  auto decode = makeTlsAgent("decode", pki.issue("decode", "ca"));
  auto plain = kvx::test::makeAgent("plain", "inproc");
  auto peer = plain->connect(decode->listenAddress());
  REQUIRE_FALSE(peer.isOk());
  CHECK(peer.status().code() == StatusCode::kUnauthenticated);
  CHECK_FALSE(decode->peerInfo("plain").isOk());
}
