// kvx-test-labels: unit
// The transport conformance suite on kvx's own socket transport (loopback), plus what is
// specific to it: the target's own checks of every request, a restarted peer refused, a
// background connect bounded by its timeout, strangers on the data port.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

#include "engine/transport/socket/socket_address.h"
#include "engine/transport/socket/socket_memory.h"
#include "engine/transport/socket/socket_wire.h"
#include "tests/engine/transport/transport_conformance.h"

namespace kvx::test {

ConformanceConfig conformanceConfig() {
  ConformanceConfig config;
  config.transport = "socket";
  config.options.netDevices = "lo";
  config.options.connectTimeout = std::chrono::milliseconds(2000);
  config.detectsPeerLoss = true;
  return config;
}

namespace conformance {
namespace {

// A blocking client socket connected to the transport's published address.
int connectRaw(const engine::Transport& transport) {
  auto address = engine::socket::parseSocketAddress(transport.localAddress());
  REQUIRE(address.isOk());
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(address->port);
  target.sin_addr.s_addr = address->addresses.front();
  REQUIRE(::connect(fd, reinterpret_cast<const sockaddr*>(&target), sizeof(target)) == 0);
  return fd;
}

// Progresses `transport` until `fd` reads end-of-file or a reset; false after 5 s.
bool closedByPeer(engine::Transport& transport, int fd) {
  const auto deadline = Clock::now() + 5s;
  while (Clock::now() < deadline) {
    transport.progress();
    std::uint8_t byte = 0;
    const ssize_t got = ::recv(fd, &byte, 1, MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

}  // namespace

TEST_CASE("socket: the endpoint describes its tcp peer on loopback", "[socket]") {
  Link link;
  INFO(link.endpoint->description());
  CHECK(link.endpoint->description().find("socket/tcp 127.0.0.1:") == 0);
  CHECK_FALSE(link.a->supportsMemoryKind(MemoryKind::kCuda));
  CHECK(link.a->whyNotMemoryKind(MemoryKind::kCuda).find("CPU") != std::string::npos);
}

TEST_CASE("socket: the target refuses a key whose secret is wrong, and touches nothing",
          "[socket]") {
  Link link;
  auto packed = engine::socket::parseRegionKey(link.remote.memory->packedRemoteKey());
  REQUIRE(packed.isOk());
  engine::socket::RegionKey forged = *packed;
  forged.secret ^= 1;
  auto key = link.unpack(engine::socket::packRegionKey(forged));
  fillPattern(link.local.span(0, 4096), 3);
  engine::RmaOp op = link.op(0, 0, 4096);
  op.remoteKey = key.get();
  CountingCompletion refused;
  link.endpoint->put(op, &refused);
  link.progressUntil([&] { return refused.count() == 1; }, "the forged put's answer");
  CHECK(refused.firstError().code() == StatusCode::kUnauthenticated);
  CHECK(std::all_of(link.remote.bytes.begin(), link.remote.bytes.begin() + 4096,
                    [](std::uint8_t b) { return b == 0; }));
  // The connection survives a refusal: the next put with the real key lands.
  CountingCompletion written;
  link.endpoint->put(link.op(0, 0, 4096), &written);
  link.endpoint->flush(&written);
  link.await(written, 2, "a put with the real key");
  CHECK(checkPattern(link.remote.span(0, 4096), 3).empty());
  CHECK_FALSE(link.endpoint->failed());
}

TEST_CASE("socket: a deregistered region is refused by the target", "[socket]") {
  Link link;
  auto extra = link.b->allocateMemory(65536, MemoryKind::kHost, -1);
  REQUIRE(extra.isOk());
  auto key = link.unpack((*extra)->packedRemoteKey());
  const auto remoteAddress = reinterpret_cast<std::uint64_t>((*extra)->address());
  extra->reset();
  engine::RmaOp op = link.op(0, 0, 4096);
  op.remoteKey = key.get();
  op.remoteAddress = remoteAddress;
  CountingCompletion refused;
  link.endpoint->get(op, &refused);
  link.progressUntil([&] { return refused.count() == 1; }, "the stale get's answer");
  CHECK(refused.firstError().code() == StatusCode::kNotFound);
}

TEST_CASE("socket: an endpoint to a restarted peer (same port, new instance) is refused",
          "[socket]") {
  Link link;
  auto address = engine::socket::parseSocketAddress(link.b->localAddress());
  REQUIRE(address.isOk());
  address->instance ^= 0xff;
  Status reported;
  std::atomic<int> errors{0};
  auto stale =
      link.a->connect(engine::socket::packSocketAddress(*address), [&](const Status& status) {
        reported = status;
        errors.fetch_add(1);
      });
  REQUIRE(stale.isOk());
  CountingCompletion refused;
  (*stale)->put(link.op(0, 0, 64), &refused);
  link.progressUntil([&] { return errors.load() == 1 && refused.count() == 1; },
                     "the stale endpoint to fail");
  INFO(reported.toString());
  CHECK(reported.code() == StatusCode::kPeerFailed);
  CHECK(reported.message().find("restarted") != std::string::npos);
  CHECK(refused.errors() == 1);
  CHECK((*stale)->failed());
  // The live endpoint is untouched.
  CountingCompletion written;
  link.endpoint->put(link.op(0, 0, 64), &written);
  link.await(written, 1, "a put on the live endpoint");
}

TEST_CASE("socket: connecting to a port nobody listens on fails the endpoint, not the caller",
          "[socket]") {
  std::unique_ptr<engine::Transport> transport = makeTransport("socket-refused");
  engine::socket::SocketAddress nobody;
  nobody.instance = 1;
  nobody.port = 1;  // tcpmux: nothing listens there on a test host
  nobody.addresses = {htonl(INADDR_LOOPBACK)};
  std::atomic<int> errors{0};
  Status reported;
  auto endpoint =
      transport->connect(engine::socket::packSocketAddress(nobody), [&](const Status& status) {
        reported = status;
        errors.fetch_add(1);
      });
  REQUIRE(endpoint.isOk());
  progressUntil(
      {transport.get()}, [&] { return errors.load() == 1; }, "the connect to fail");
  INFO(reported.toString());
  CHECK(reported.code() == StatusCode::kPeerFailed);
  CHECK(reported.message().find("127.0.0.1:1") != std::string::npos);
}

TEST_CASE("socket: with loopback peers only, an address off this host is refused at once",
          "[socket]") {
  // Without authentication a hello could make the agent dial any address and port it names.
  engine::TransportOptions options = conformanceConfig().options;
  options.agentName = "socket-loopback-only";
  options.loopbackPeersOnly = true;
  auto created = engine::createTransport("socket", options);
  REQUIRE(created.isOk());
  std::unique_ptr<engine::Transport> transport = std::move(created).value();
  engine::socket::SocketAddress remote;
  remote.instance = 1;
  remote.port = 22;
  remote.addresses = {htonl(0x0a010203)};  // 10.1.2.3
  auto refused = transport->connect(engine::socket::packSocketAddress(remote), nullptr);
  REQUIRE_FALSE(refused.isOk());
  CHECK(refused.status().code() == StatusCode::kUnauthenticated);
  CHECK_THAT(refused.status().message(),
             Catch::Contains("10.1.2.3:22") && Catch::Contains("only to peers on this host"));
  // A peer that also offers a loopback address is reached there.
  std::unique_ptr<engine::Transport> peer = makeTransport("socket-loopback-peer");
  auto local = engine::socket::parseSocketAddress(peer->localAddress());
  REQUIRE(local.isOk());
  local->addresses.insert(local->addresses.begin(), htonl(0x0a010203));
  auto reached = transport->connect(engine::socket::packSocketAddress(*local), nullptr);
  INFO(reached.status().toString());
  CHECK(reached.isOk());
}

TEST_CASE("socket: a connect that hangs fails when the connect timeout passes", "[socket]") {
  // A listener whose backlog is full never completes another handshake: SYNs are dropped.
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(listener, reinterpret_cast<const sockaddr*>(&local), sizeof(local)) == 0);
  REQUIRE(::listen(listener, 0) == 0);
  socklen_t length = sizeof(local);
  REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&local), &length) == 0);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    (void)::connect(fd, reinterpret_cast<const sockaddr*>(&local), sizeof(local));
    fillers.push_back(fd);
  }
  engine::TransportOptions options;
  options.agentName = "socket-hang";
  options.netDevices = "lo";
  options.connectTimeout = 300ms;
  auto transport = engine::createTransport("socket", options);
  REQUIRE(transport.isOk());
  engine::socket::SocketAddress silent;
  silent.instance = 1;
  silent.port = ntohs(local.sin_port);
  silent.addresses = {htonl(INADDR_LOOPBACK)};
  std::atomic<int> errors{0};
  Status reported;
  const auto started = Clock::now();
  auto endpoint =
      (*transport)->connect(engine::socket::packSocketAddress(silent), [&](const Status& status) {
        reported = status;
        errors.fetch_add(1);
      });
  REQUIRE(endpoint.isOk());
  CHECK(Clock::now() - started < 100ms);
  progressUntil(
      {transport->get()}, [&] { return errors.load() == 1; }, "the connect timeout");
  INFO(reported.toString());
  CHECK(reported.code() == StatusCode::kPeerFailed);
  const bool timedOutOrRefused = reported.message().find("within 300 ms") != std::string::npos ||
                                 reported.message().find("refused") != std::string::npos;
  CHECK(timedOutOrRefused);
  for (int fd : fillers) ::close(fd);
  ::close(listener);
}

TEST_CASE("socket: strangers on the data port are closed; transfers go on", "[socket]") {
  Link link;
  const int garbage = connectRaw(*link.b);
  std::vector<std::uint8_t> noise(256);
  fillPattern(noise, 5);
  REQUIRE(::send(garbage, noise.data(), noise.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(noise.size()));
  CHECK(closedByPeer(*link.b, garbage));

  // A well-formed put without a hello first.
  const int rude = connectRaw(*link.b);
  engine::socket::FrameHeader put;
  put.type = engine::socket::FrameType::kPut;
  put.sequence = 1;
  put.length = 8;
  const auto encoded = engine::socket::encodeFrameHeader(put);
  REQUIRE(::send(rude, encoded.data(), encoded.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(encoded.size()));
  CHECK(closedByPeer(*link.b, rude));

  fillPattern(link.local.span(0, 1u << 20), 8);
  CountingCompletion written;
  link.endpoint->put(link.op(0, 0, 1u << 20), &written);
  link.endpoint->flush(&written);
  link.await(written, 2, "a put while strangers came and went");
  CHECK(checkPattern(link.remote.span(0, 1u << 20), 8).empty());
  ::close(garbage);
  ::close(rude);
}

TEST_CASE("socket: a silent connection is closed after the connect timeout", "[socket]") {
  std::unique_ptr<engine::Transport> transport = makeTransport("socket-silent");
  const int silent = connectRaw(*transport);
  // conformanceConfig()'s connect timeout is 2 s.
  CHECK(closedByPeer(*transport, silent));
  ::close(silent);
}

TEST_CASE("socket: a burst of small puts past the read budget all complete", "[socket]") {
  // More than one progress() call's read budget (16 MiB) of 4 KiB puts, then a message: the
  // frames a budgeted read leaves in the target's buffer must still be answered.
  Link link;
  constexpr int kOps = 6000;
  constexpr std::uint64_t kSize = 4096;
  constexpr std::uint64_t kSlots = (8u << 20) / kSize;
  fillPattern(link.local.span(0, 8u << 20), 51);
  CountingCompletion puts;
  for (int i = 0; i < kOps; ++i) {
    const std::uint64_t offset = (i % kSlots) * kSize;
    link.endpoint->put(link.op(offset, offset, kSize), &puts);
  }
  const std::vector<std::uint8_t> header = {'e', 'n', 'd'};
  CountingCompletion sent;
  link.endpoint->sendMessage(header, {}, &sent);
  CountingCompletion flushed;
  link.endpoint->flush(&flushed);
  link.await(puts, kOps, "6000 puts");
  link.await(sent, 1, "the message after them");
  link.await(flushed, 1, "the flush after them");
  CHECK(checkPattern(link.remote.span(0, 8u << 20), 51).empty());
}

TEST_CASE("socket: a graceful close of an endpoint to its own transport finishes its puts",
          "[socket]") {
  std::unique_ptr<engine::Transport> transport = makeTransport("socket-self-close");
  Buffer buffer = registerBuffer(*transport, 4u << 20);
  auto connected = transport->connect(transport->localAddress(), nullptr);
  REQUIRE(connected.isOk());
  std::shared_ptr<engine::Endpoint> endpoint = std::move(connected).value();
  auto key = endpoint->unpackRemoteKey(buffer.memory->packedRemoteKey(), MemoryKind::kHost);
  REQUIRE(key.isOk());
  fillPattern(buffer.span(0, 2u << 20), 61);
  engine::RmaOp op;
  op.localAddress = buffer.data();
  op.localMemory = buffer.memory.get();
  op.remoteAddress = reinterpret_cast<std::uint64_t>(buffer.data() + (2u << 20));
  op.remoteKey = key->get();
  op.length = 2u << 20;
  CountingCompletion written;
  endpoint->put(op, &written);
  // Nobody else progresses the transport: the close itself must serve the inbound side.
  const auto started = Clock::now();
  endpoint->close(false);
  CHECK(Clock::now() - started < 2s);
  REQUIRE(written.count() == 1);
  CHECK(written.errors() == 0);
  CHECK(checkPattern(buffer.span(2u << 20, 2u << 20), 61).empty());
}

TEST_CASE("socket: out of descriptors, the listener pauses instead of spinning", "[socket]") {
  std::unique_ptr<engine::Transport> transport = makeTransport("socket-emfile");
  const int waiting = connectRaw(*transport);  // queued in the listener's backlog
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
  // Room for no descriptor at all: the limit just above the highest one open, and every free
  // slot below it taken.
  int highest = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    highest = std::max(highest, std::atoi(entry.path().filename().c_str()));
  }
  rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(highest + 1);
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &tight) == 0);
  std::vector<int> fillers;
  for (int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC); fd >= 0;
       fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) {
    fillers.push_back(fd);
  }
  for (int i = 0; i < 10; ++i) {  // accept fails with EMFILE
    transport->progress();
    std::this_thread::sleep_for(1ms);
  }
  pollfd sleeping{transport->eventFd(), POLLIN, 0};
  const int ready = ::poll(&sleeping, 1, 50);
  for (int fd : fillers) ::close(fd);
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &saved) == 0);
  CHECK(ready == 0);  // the listener is not watched: a driver would sleep, not spin
  // After the pause the connection is accepted: a stranger's bytes get it closed.
  std::this_thread::sleep_for(150ms);
  const std::uint8_t garbage[64] = {1, 2, 3};
  REQUIRE(::send(waiting, garbage, sizeof(garbage), MSG_NOSIGNAL) == sizeof(garbage));
  CHECK(closedByPeer(*transport, waiting));
  ::close(waiting);
}

}  // namespace conformance
}  // namespace kvx::test
