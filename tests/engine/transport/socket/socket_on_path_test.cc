// kvx-test-labels: unit
// What a party on the path of a socket data connection can do (frame_protection.h): it sits
// between the endpoint and the target (TcpRelay), sees every byte, and even knows the region
// key and the target's instance (what an observer of an unprotected control channel would
// have). It cannot read an encrypted body, replay a recorded connection, change a header or
// a body, lower the protection asked for, or address a region without the data key: each
// attempt touches no memory and nothing changed is reported done.
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "engine/transport/socket/frame_protection.h"
#include "engine/transport/socket/socket_address.h"
#include "engine/transport/socket/socket_memory.h"
#include "engine/transport/socket/socket_wire.h"
#include "tests/engine/transport/socket/tcp_relay.h"
#include "tests/engine/transport/transport_conformance_support.h"

namespace kvx::test {

namespace conformance {
namespace {

namespace socket = engine::socket;
constexpr std::uint64_t kBytes = 64u << 10;

std::unique_ptr<engine::Transport> makeSocket(const std::string& name, DataProtection protection) {
  engine::TransportOptions options;
  options.netDevices = "lo";
  options.connectTimeout = std::chrono::milliseconds(2000);
  options.agentName = name;
  options.dataProtection = protection;
  auto transport = engine::createTransport("socket", options);
  REQUIRE(transport.isOk());
  return std::move(transport).value();
}

socket::SocketAddress addressOf(const engine::Transport& transport) {
  auto address = socket::parseSocketAddress(transport.localAddress());
  REQUIRE(address.isOk());
  return *address;
}

bool allZero(std::span<const std::uint8_t> bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](std::uint8_t b) { return b == 0; });
}

bool contains(const std::vector<std::uint8_t>& haystack, std::span<const std::uint8_t> needle) {
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end()) !=
         haystack.end();
}

// a's endpoint reaches b through a relay; b's buffer and its key as a holds it.
struct RelayedLink {
  RelayedLink(DataProtection protectA, DataProtection protectB,
              std::optional<TcpRelay::Change> change = {})
      : a(makeSocket("on-path-a", protectA)),
        b(makeSocket("on-path-b", protectB)),
        relay(addressOf(*b).port, change) {
    local = registerBuffer(*a, kBytes);
    remote = registerBuffer(*b, kBytes);
    socket::SocketAddress viaRelay = addressOf(*b);
    viaRelay.addresses = {htonl(INADDR_LOOPBACK)};
    viaRelay.port = relay.port();
    auto connected = a->connect(socket::packSocketAddress(viaRelay), nullptr);
    REQUIRE(connected.isOk());
    endpoint = std::move(connected).value();
    auto unpacked = endpoint->unpackRemoteKey(remote.memory->packedRemoteKey(), MemoryKind::kHost);
    REQUIRE(unpacked.isOk());
    key = std::move(unpacked).value();
  }
  ~RelayedLink() {
    key.reset();
    if (endpoint) endpoint->close(true);
    endpoint.reset();
    local.memory.reset();
    remote.memory.reset();
  }

  // Puts local's first kBytes (pattern `seed`) to remote's and waits for the answer.
  Status put(std::uint64_t seed) {
    fillPattern(local.span(0, kBytes), seed);
    engine::RmaOp op;
    op.localAddress = local.data();
    op.localMemory = local.memory.get();
    op.remoteAddress = reinterpret_cast<std::uint64_t>(remote.data());
    op.remoteKey = key.get();
    op.length = kBytes;
    CountingCompletion done;
    endpoint->put(op, &done);
    progressUntil(
        {a.get(), b.get()}, [&] { return done.count() == 1; }, "the put's answer");
    return done.firstError();
  }

  std::unique_ptr<engine::Transport> a;
  std::unique_ptr<engine::Transport> b;
  TcpRelay relay;
  Buffer local;
  Buffer remote;
  std::shared_ptr<engine::Endpoint> endpoint;
  std::unique_ptr<engine::RemoteKey> key;
};

// Sends `bytes` on a new connection to `target`'s data port, progresses it, and returns
// whether the target closed the connection.
bool sentAndClosed(engine::Transport& target, std::span<const std::uint8_t> bytes) {
  const int fd = TcpRelay::dial(addressOf(target).port);
  REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(bytes.size()));
  const auto deadline = Clock::now() + 5s;
  bool closed = false;
  while (!closed && Clock::now() < deadline) {
    target.progress();
    std::uint8_t scratch[4096];
    const ssize_t got = ::recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT);
    closed = got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }
  ::close(fd);
  return closed;
}

std::vector<std::uint8_t> encoded(const socket::FrameHeader& header) {
  const socket::EncodedHeader bytes = socket::encodeFrameHeader(header);
  return std::vector<std::uint8_t>(bytes.begin(), bytes.end());
}

// The plain hello an initiator sends: 56-byte header then its nonce.
std::vector<std::uint8_t> hello(const engine::Transport& target, std::uint32_t protection) {
  socket::FrameHeader header;
  header.type = socket::FrameType::kHello;
  header.aux = protection;
  header.region = addressOf(target).instance;
  header.key = 77;
  header.length = socket::kNonceBytes;
  std::vector<std::uint8_t> out = encoded(header);
  out.resize(out.size() + socket::kNonceBytes, 0x5a);
  return out;
}

// Offsets in what an initiator sends: the hello, then the first request's header and tag.
constexpr std::uint64_t kHelloBytes = socket::kFrameHeaderBytes + socket::kNonceBytes;
constexpr std::uint64_t kFirstBody = kHelloBytes + socket::kFrameHeaderBytes + socket::kTagBytes;

}  // namespace

using DataProtection::kAuthenticated;
using DataProtection::kEncrypted;
using DataProtection::kHeaders;

TEST_CASE(
    "on path: encrypted, the bytes of a put do not cross in clear; otherwise they "
    "cross as they are, and arrive whole",
    "[socket]") {
  for (const DataProtection protection : {kEncrypted, kAuthenticated, kHeaders}) {
    INFO("protection " << toString(protection));
    RelayedLink link(kHeaders, protection);
    REQUIRE(link.put(11).isOk());
    CHECK(checkPattern(link.remote.span(0, kBytes), 11).empty());
    const std::vector<std::uint8_t> seen = link.relay.recorded();
    CHECK(seen.size() >= kFirstBody + kBytes);
    CHECK(contains(seen, link.local.span(4096, 256)) == (protection != kEncrypted));
  }
}

TEST_CASE("on path: a recorded connection replayed to the target touches nothing", "[socket]") {
  RelayedLink link(kHeaders, kHeaders);
  REQUIRE(link.put(12).isOk());
  const std::vector<std::uint8_t> seen = link.relay.recorded();
  std::fill(link.remote.bytes.begin(), link.remote.bytes.end(), 0);
  // The target answers the replayed hello with a fresh nonce: the connection's keys are new
  // and the recorded put's header no longer opens.
  CHECK(sentAndClosed(*link.b, seen));
  CHECK(allZero(link.remote.span(0, kBytes)));
}

TEST_CASE("on path: a header changed on the way is refused before any byte lands", "[socket]") {
  // One bit of the put's (encrypted) target address, header offset 40.
  RelayedLink link(kHeaders, kHeaders, TcpRelay::Change{kHelloBytes + 40, 0x01});
  const Status put = link.put(13);
  INFO(put.toString());
  CHECK_FALSE(put.isOk());
  CHECK(link.endpoint->failed());
  CHECK(allZero(link.remote.span(0, kBytes)));
}

TEST_CASE(
    "on path: with blocks authenticated or encrypted, a body changed on the way is "
    "never reported done",
    "[socket]") {
  for (const DataProtection protection : {kAuthenticated, kEncrypted}) {
    RelayedLink link(kHeaders, protection, TcpRelay::Change{kFirstBody + 1000, 0x80});
    const Status put = link.put(14);
    INFO(toString(protection) << ": " << put.toString());
    CHECK_FALSE(put.isOk());
    CHECK(link.endpoint->failed());
  }
}

TEST_CASE("on path: lowering the protection a hello asks for makes the keys differ", "[socket]") {
  // The initiator encrypts; the relay rewrites its hello's aux from encrypted (3) to headers
  // (1), which the target alone would accept.
  static_assert(socket::kProtectEncrypted == 3 && socket::kProtectHeaders == 1);
  RelayedLink link(kEncrypted, kHeaders, TcpRelay::Change{8, 0x02});
  const Status put = link.put(15);
  INFO(put.toString());
  CHECK_FALSE(put.isOk());
  CHECK(allZero(link.remote.span(0, kBytes)));
}

TEST_CASE("on path: a connection gets the stronger protection of its two ends", "[socket]") {
  RelayedLink link(kEncrypted, kHeaders);
  REQUIRE(link.put(16).isOk());
  CHECK_FALSE(contains(link.relay.recorded(), link.local.span(4096, 256)));
  CHECK(link.endpoint->description().find("(encrypted)") != std::string::npos);
}

TEST_CASE("on path: a stranger with the region key but not the data key addresses nothing",
          "[socket]") {
  std::unique_ptr<engine::Transport> target = makeSocket("on-path-target", kHeaders);
  Buffer region = registerBuffer(*target, kBytes);
  fillPattern(region.span(0, kBytes), 16);
  auto regionKey = socket::parseRegionKey(region.memory->packedRemoteKey());
  REQUIRE(regionKey.isOk());
  for (const socket::FrameType type : {socket::FrameType::kGet, socket::FrameType::kPut}) {
    std::vector<std::uint8_t> bytes = hello(*target, socket::kProtectHeaders);
    socket::FrameHeader request;
    request.type = type;
    request.sequence = 1;
    request.region = regionKey->region;
    request.key = regionKey->secret;
    request.address = regionKey->address;
    request.length = 64;
    const std::vector<std::uint8_t> header = encoded(request);
    bytes.insert(bytes.end(), header.begin(), header.end());
    bytes.resize(bytes.size() + socket::kTagBytes, 0);  // a tag it cannot make
    if (type == socket::FrameType::kPut) bytes.resize(bytes.size() + 64, 0);
    INFO(socket::toString(type));
    CHECK(sentAndClosed(*target, bytes));
    CHECK(checkPattern(region.span(0, kBytes), 16).empty());
  }
}

TEST_CASE("on path: a target that encrypts refuses a hello that asks for less", "[socket]") {
  std::unique_ptr<engine::Transport> target = makeSocket("on-path-encrypted", kEncrypted);
  CHECK(addressOf(*target).protection == socket::kProtectEncrypted);
  const int fd = TcpRelay::dial(addressOf(*target).port);
  const std::vector<std::uint8_t> bytes = hello(*target, socket::kProtectAuthenticated);
  REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(bytes.size()));
  std::vector<std::uint8_t> answer;
  const auto deadline = Clock::now() + 5s;
  while (answer.size() < socket::kFrameHeaderBytes && Clock::now() < deadline) {
    target->progress();
    std::uint8_t scratch[4096];
    const ssize_t got = ::recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT);
    if (got > 0) answer.insert(answer.end(), scratch, scratch + got);
    if (got == 0) break;
  }
  ::close(fd);
  REQUIRE(answer.size() >= socket::kFrameHeaderBytes);
  auto header = socket::decodeFrameHeader(
      std::span<const std::uint8_t>(answer).first(socket::kFrameHeaderBytes));
  REQUIRE(header.isOk());
  CHECK(header->type == socket::FrameType::kError);
  CHECK(header->aux == static_cast<std::uint32_t>(StatusCode::kUnauthenticated));
}

}  // namespace conformance
}  // namespace kvx::test
