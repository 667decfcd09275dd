// kvx-test-labels: multiprocess
// Two real agent processes on 127.0.0.1 (this test and a pair_transfer target) over UCX tcp
// and shared memory: random descriptor lists each way, and notifications that must never
// overtake their data.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <deque>
#include <map>
#include <random>
#include <thread>

#include "examples/pair_transfer/pattern.h"
#include "kvx/agent.h"
#include "tests/support/target_process.h"

using namespace kvx;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t kBufferBytes = 64ull << 20;

struct Session {
  explicit Session(const std::string& transport)
      : target(test::startTarget(transport, kBufferBytes)) {
    AgentOptions options;
    options.name = "test-initiator-" + std::to_string(::getpid());
    options.listenAddress = "";
    options.ucxTransports = transport;
    agent = std::move(Agent::create(options).value());
    auto name = agent->connect(target.address);
    REQUIRE(name.isOk());
    peer = *name;
    auto info = agent->peerInfo(peer);
    REQUIRE(info.isOk());
    REQUIRE(info->regions.size() == 1);
    remote = info->regions[0].id;
    local.assign(kBufferBytes, 0);
    localId = agent->registerMemory({"local", local.data(), local.size()}).value();
  }
  ~Session() {
    agent->sendNotification(peer, "exit").ignore();
    target.process.waitExit(10s);
  }

  std::string ask(const pair_transfer::Command& command) {
    REQUIRE(agent->sendNotification(peer, pair_transfer::formatCommand(command)).isOk());
    auto reply = agent->waitNotification(deadlineIn(30s));
    REQUIRE(reply.isOk());
    return pair_transfer::parseReply(reply->payload).result;
  }

  test::TargetProcess target;
  std::unique_ptr<Agent> agent;
  std::string peer;
  RegionId remote;
  std::vector<std::uint8_t> local;
  RegionId localId;
};

// Random non-overlapping (offset, length) pairs inside the buffer, lengths 1 B .. 4 MiB.
std::vector<std::pair<std::uint64_t, std::uint64_t>> randomSegments(std::mt19937_64& rng,
                                                                    std::size_t count) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  const std::uint64_t slot = kBufferBytes / count;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t length =
        std::min<std::uint64_t>(slot, 1 + rng() % (rng() % 2 ? 4096 : (4ull << 20)));
    const std::uint64_t offset = i * slot + rng() % (slot - length + 1);
    out.emplace_back(offset, length);
  }
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

}  // namespace

TEST_CASE("random descriptor lists WRITE and READ with every byte verified", "[multiprocess]") {
  const std::string transport = GENERATE("tcp", "shm");
  INFO("transport " << transport);
  Session s(transport);
  std::mt19937_64 rng(7);

  for (int round = 0; round < 4; ++round) {
    const std::uint64_t seed = 100 + static_cast<std::uint64_t>(round);
    auto segments = randomSegments(rng, 1 + rng() % 64);
    const bool write = round % 2 == 0;
    if (write) {
      pair_transfer::fillPattern(s.local, 0, seed);
    } else {
      REQUIRE(s.ask({"fill", 0, kBufferBytes, seed}) == "ok");
      std::fill(s.local.begin(), s.local.end(), 0);
    }
    TransferRequest request{s.peer, write ? TransferOp::kWrite : TransferOp::kRead, {}, {}};
    for (auto [offset, length] : segments) {
      request.segments.push_back({{s.localId, offset, length}, {s.remote, offset, length}});
    }
    auto id = s.agent->submit(request);
    REQUIRE(id.isOk());
    REQUIRE(s.agent->wait(*id, deadlineIn(60s)).isOk());
    for (auto [offset, length] : segments) {
      if (write) {
        REQUIRE(s.ask({"check", offset, length, seed}) == "ok");
      } else {
        const std::string problem = pair_transfer::checkPattern(
            std::span<const std::uint8_t>(s.local.data() + offset, length), offset, seed);
        REQUIRE(problem.empty());
      }
    }
    REQUIRE(s.agent->release(*id).isOk());
  }
}

TEST_CASE("10,000 notified transfers: each notification finds its data in place",
          "[multiprocess]") {
  const std::string transport = GENERATE("tcp", "shm");
  INFO("transport " << transport);
  Session s(transport);
  std::mt19937_64 rng(11);
  constexpr int kTransfers = 10000;
  constexpr int kInFlight = 16;
  constexpr std::uint64_t kSlot = 64 * 1024;  // local staging area per in-flight transfer

  // Each transfer writes fresh bytes (its own seed) to a remote place and asks the target,
  // in the notification that rides behind the data, to check them on arrival. Remote places
  // are split by lane (i % kInFlight); a lane is written again only after the target has
  // answered the lane's previous check, so no transfer overwrites bytes another one's check
  // is about to read. Notifications of different transfers may arrive in any order, so
  // replies are matched to transfers by the command they echo.
  std::deque<TransferId> pending;
  std::vector<std::string> sent;
  std::map<std::string, int> transferOf;
  std::vector<bool> answered(kTransfers, false);
  int ok = 0;
  int received = 0;
  auto collect = [&] {
    auto n = s.agent->waitNotification(deadlineIn(30s));
    REQUIRE(n.isOk());
    const pair_transfer::Reply reply = pair_transfer::parseReply(n->payload);
    auto it = transferOf.find(reply.command);
    REQUIRE(it != transferOf.end());
    answered[static_cast<std::size_t>(it->second)] = true;
    ++received;
    if (reply.result == "ok") {
      ++ok;
    } else {
      FAIL_CHECK("transfer " << it->second << " (" << reply.command << "): " << reply.result);
    }
  };
  for (int i = 0; i < kTransfers; ++i) {
    const std::uint64_t slot = static_cast<std::uint64_t>(i % kInFlight);
    if (pending.size() == kInFlight) {
      REQUIRE(s.agent->wait(pending.front(), deadlineIn(30s)).isOk());
      REQUIRE(s.agent->release(pending.front()).isOk());
      pending.pop_front();
    }
    if (i >= kInFlight) {
      while (!answered[static_cast<std::size_t>(i - kInFlight)]) collect();
    }
    const std::uint64_t length = 1 + rng() % kSlot;
    const std::uint64_t lanes = kBufferBytes / kSlot / kInFlight;
    const std::uint64_t remoteOffset = ((rng() % lanes) * kInFlight + slot) * kSlot;
    const std::uint64_t seed = 1000 + static_cast<std::uint64_t>(i);
    pair_transfer::fillPattern(std::span<std::uint8_t>(s.local.data() + slot * kSlot, length),
                               remoteOffset, seed);
    sent.push_back(pair_transfer::formatCommand({"check", remoteOffset, length, seed}));
    transferOf[sent.back()] = i;
    TransferRequest request{s.peer,
                            TransferOp::kWrite,
                            {{{s.localId, slot * kSlot, length}, {s.remote, remoteOffset, length}}},
                            sent.back()};
    auto id = s.agent->submit(request);
    REQUIRE(id.isOk());
    pending.push_back(*id);
  }
  while (received < kTransfers) collect();
  for (TransferId id : pending) REQUIRE(s.agent->wait(id, deadlineIn(30s)).isOk());
  CHECK(ok == kTransfers);
}

TEST_CASE("cancel returns while the target is stopped, and no byte lands afterwards",
          "[multiprocess]") {
  // Over tcp a get is served by the target's progress thread: a stopped target (SIGSTOP)
  // leaves every operation in flight, so cancel must reset the endpoint to return.
  Session s("tcp");
  REQUIRE(s.ask({"fill", 0, kBufferBytes, 77}) == "ok");
  std::fill(s.local.begin(), s.local.end(), 0);
  REQUIRE(::kill(s.target.process.pid(), SIGSTOP) == 0);

  TransferRequest request{
      s.peer, TransferOp::kRead, {{{s.localId, 0, 32ull << 20}, {s.remote, 0, 32ull << 20}}}, {}};
  auto id = s.agent->submit(request);
  REQUIRE(id.isOk());
  std::this_thread::sleep_for(50ms);
  CHECK(s.agent->poll(*id).state == TransferState::kPending);
  const auto started = Clock::now();
  REQUIRE(s.agent->cancel(*id).isOk());
  CHECK(Clock::now() - started < 5s);
  const TransferStatus status = s.agent->poll(*id);
  CHECK(status.state == TransferState::kFailed);
  CHECK(status.status.code() == StatusCode::kCancelled);

  const std::vector<std::uint8_t> snapshot = s.local;
  REQUIRE(::kill(s.target.process.pid(), SIGCONT) == 0);
  std::this_thread::sleep_for(300ms);
  CHECK(s.local == snapshot);
}
