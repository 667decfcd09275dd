// kvx-test-labels: unit ucx
// A peer's UCX worker address and packed keys reach this process's UCX only after
// kvx-ucx-probe took them (engine/transport/ucx/ucx_peer_probe.h). A crafted address that
// passes kvx's own frame checks (0x02 and 40 zero bytes, or a real address with its first
// byte changed) used to abort the whole process inside ucp_ep_create; now it is an error,
// and this test process lives on to check the next one. Likewise a crafted key.
#include <ucp/api/ucp.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <vector>

#include "engine/transport/transport_registry.h"
#include "engine/transport/ucx/ucx_frame.h"
#include "engine/transport/ucx/ucx_remote_key.h"
#include "engine/transport/ucx/ucx_transport.h"

namespace kvx::engine {
namespace {

std::unique_ptr<Transport> makeTransport(const std::string& name, const std::string& selection) {
  TransportOptions options;
  options.agentName = name;
  options.transports = selection;
  auto transport = createTransport("ucx", options);
  REQUIRE(transport.isOk());
  return std::move(transport).value();
}

std::uint64_t probesRun(Transport& transport) {
  return dynamic_cast<ucx::UcxTransport&>(transport).probesRun();
}

// The UCX body of a transport address (the frame of ucx_frame.h removed).
std::vector<std::uint8_t> bodyOf(const std::vector<std::uint8_t>& framed) {
  auto body = ucx::unframe(ucx::kAddressMagic, framed, "own address");
  REQUIRE(body.isOk());
  return {body->begin(), body->end()};
}

// The peer transport does not progress here: close without waiting for it.
void closeNow(Endpoint& endpoint) {
  endpoint.forceClose(std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
}

bool ucxAsserts() {
  // Debian's UCX 1.13 is built with assertions: crafted addresses abort it.
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  return major == 1 && minor < 16;
}

}  // namespace

TEST_CASE("ucx peer probe: a real peer address is taken, once per address", "[ucx]") {
  const std::string selection = GENERATE("shm", "tcp");
  INFO("transports " << selection);
  auto a = makeTransport("a", selection);
  auto b = makeTransport("b", selection);
  auto endpoint = a->connect(b->localAddress(), [](const Status&) {});
  INFO(endpoint.status().toString());
  REQUIRE(endpoint.isOk());
  CHECK(probesRun(*a) == 1);
  closeNow(**endpoint);
  auto again = a->connect(b->localAddress(), [](const Status&) {});
  REQUIRE(again.isOk());
  CHECK(probesRun(*a) == 1);  // remembered
  closeNow(**again);
}

TEST_CASE("ucx peer probe: crafted addresses are refused and the process lives", "[ucx]") {
  const std::string selection = GENERATE("shm", "tcp");
  INFO("transports " << selection);
  auto a = makeTransport("a", selection);
  auto b = makeTransport("b", selection);
  const std::vector<std::uint8_t> real = bodyOf(b->localAddress());

  std::vector<std::uint8_t> versionTwo(41, 0);
  versionTwo[0] = 0x02;
  std::vector<std::uint8_t> firstByteChanged = real;
  firstByteChanged[0] ^= 0x0F;
  struct Crafted {
    const char* what;
    std::vector<std::uint8_t> body;
    bool abortsUcx;  // known to abort a UCX built with assertions
  };
  const std::vector<Crafted> crafted = {
      {"0x02 and 40 zero bytes", versionTwo, true},
      {"a real address with its first byte changed", firstByteChanged, true},
  };
  for (const Crafted& c : crafted) {
    INFO(c.what);
    auto endpoint = a->connect(ucx::frame(ucx::kAddressMagic, c.body), [](const Status&) {});
    INFO((endpoint.isOk() ? std::string("taken") : endpoint.status().toString()));
    if (c.abortsUcx && ucxAsserts()) {
      REQUIRE_FALSE(endpoint.isOk());
      CHECK(endpoint.status().code() == StatusCode::kInvalidArgument);
      CHECK_THAT(endpoint.status().message(), Catch::Contains("UCX worker address"));
    }
    if (endpoint.isOk()) closeNow(**endpoint);
  }
  // Still a working transport: the real address connects.
  auto endpoint = a->connect(b->localAddress(), [](const Status&) {});
  INFO(endpoint.status().toString());
  REQUIRE(endpoint.isOk());
  closeNow(**endpoint);
}

TEST_CASE("ucx peer probe: a probe that cannot be found refuses the address", "[ucx]") {
  auto a = makeTransport("a", "shm");
  auto b = makeTransport("b", "shm");
  ::setenv("KVX_UCX_PROBE", "/nonexistent/kvx-ucx-probe", 1);
  auto endpoint = a->connect(b->localAddress(), [](const Status&) {});
  ::unsetenv("KVX_UCX_PROBE");
  REQUIRE_FALSE(endpoint.isOk());
  CHECK(endpoint.status().code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(endpoint.status().message(), Catch::Contains("KVX_UCX_PROBE"));
}

}  // namespace kvx::engine

namespace kvx::engine {

TEST_CASE("ucx peer probe: real keys pass in one probe with the address, crafted keys are refused",
          "[ucx]") {
  const std::string selection = GENERATE("shm", "tcp");
  INFO("transports " << selection);
  auto a = makeTransport("a", selection);
  auto b = makeTransport("b", selection);
  std::vector<std::uint8_t> host(1 << 16);
  auto memory = b->registerMemory(host.data(), host.size(), MemoryKind::kHost, -1);
  REQUIRE(memory.isOk());
  const auto packed = (*memory)->packedRemoteKey();
  const std::vector<std::uint8_t> real(packed.begin(), packed.end());
  const std::vector<PeerKey> keys = {{real, MemoryKind::kHost}, {{}, MemoryKind::kCuda}};
  Status checked = a->checkPeerKeys(b->localAddress(), keys);
  INFO(checked.toString());
  REQUIRE(checked.isOk());
  CHECK(probesRun(*a) == 1);  // the address and the key together
  auto endpoint = a->connect(b->localAddress(), [](const Status&) {});
  REQUIRE(endpoint.isOk());
  CHECK(probesRun(*a) == 1);  // the address was taken with the key
  auto key = (*endpoint)->unpackRemoteKey(real, MemoryKind::kHost);
  INFO(key.status().toString());
  CHECK(key.isOk());
  CHECK(probesRun(*a) == 1);  // and so was the key
  key->reset();

  // Keys in kvx's frame whose UCX part is garbage: refused, the process lives.
  const auto parsed = ucx::parseRemoteKey(real);
  REQUIRE(parsed.isOk());
  std::vector<std::uint8_t> garbage(parsed->ucxKey.begin(), parsed->ucxKey.end());
  for (auto& byte : garbage) byte = 0xFF;
  const std::vector<std::uint8_t> crafted =
      ucx::packRemoteKey(parsed->address, parsed->length, garbage);
  const std::vector<std::uint8_t> empty = ucx::packRemoteKey(parsed->address, parsed->length, {});
  // No UCX key at all: kvx's own frame check refuses it, no probe needed.
  const std::vector<PeerKey> none = {{empty, MemoryKind::kHost}};
  CHECK(a->checkPeerKeys(b->localAddress(), none).code() == StatusCode::kInvalidArgument);
  // Garbage: whatever UCX makes of it, the probe's verdict and this process agree, and
  // this process lives.
  const std::vector<PeerKey> one = {{crafted, MemoryKind::kHost}};
  Status verdict = a->checkPeerKeys(b->localAddress(), one);
  INFO(verdict.toString());
  if (!verdict.isOk()) {
    CHECK(verdict.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(verdict.message(), Catch::Contains("packed remote key #0"));
  }
  auto unpacked = (*endpoint)->unpackRemoteKey(crafted, MemoryKind::kHost);
  CHECK(unpacked.isOk() == verdict.isOk());
  if (unpacked.isOk()) unpacked->reset();
  closeNow(**endpoint);
}

}  // namespace kvx::engine
