// kvx-test-labels: fault multiprocess
// Hostile clients on a decode agent's control port while real transfers run. A `kvx agent
// --role decode --verify` process requiring an auth token takes a steady stream of requests
// from an in-process prefill agent; meanwhile raw TCP clients send it garbage, a truncated
// frame, an oversized frame, a wrong protocol version, an unknown message type, a hello
// without authentication, a wrong token's proof, and slowloris connections (silent, dribbling
// one byte every 300 ms, stalled after auth_begin); then a flood from one address beyond
// maxControlConnectionsPerAddress. Each hostile connection must be closed by the agent within
// its bound (the slowloris ones by the handshake deadline), every real request must complete
// and verify, the flood must get exactly the limit's worth of handshake slots (nothing left
// over from the earlier attackers), and a fresh prefill agent must still connect and transfer.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>

#include "agent/channel/auth_proof.h"
#include "agent/channel/control_channel.h"
#include "tests/fault/fault_fixture.h"
#include "tests/fault/raw_control_client.h"

using namespace kvx;
using namespace kvx::test::fault;
namespace channel = kvx::agent::channel;

namespace {

// The agent's defaults (the CLI has no flags for them): the deadline of a whole inbound
// handshake, and the per-address limit the flood goes beyond.
const std::chrono::milliseconds kHandshake = AgentOptions{}.controlReadTimeout;
const std::uint32_t kPerAddress = AgentOptions{}.maxControlConnectionsPerAddress;
// How many of the flood's silent connections hold a handshake slot: one address gets no
// more than its share of them.
const std::uint32_t kFloodAdmitted =
    std::min(kPerAddress, channel::ChannelOptions{}.maxPendingHandshakesPerAddress);
constexpr std::uint32_t kFloodExtra = 8;
// A connection the agent rejects on its first bytes is closed within this (it lingers up to
// 1 s for the client to read the error first).
constexpr auto kPromptClose = 2500ms;
// Slack on the handshake deadline for a loaded 2-core machine.
constexpr auto kDeadlineSlack = 1500ms;
constexpr int kRepeats = 5;  // of each prompt attack

const std::string kToken = "kvx-hostile-test-token-" + std::to_string(::getpid());

struct Outcome {
  std::string attack;
  std::string failure;  // why the attack could not be made; empty when it was
  bool closed = false;
  std::chrono::milliseconds lifetime{0};
  std::string errorCode;  // of the ErrorMessage the agent sent, if one arrived
  bool reset = false;
};

// What `client` saw of the agent so far.
Outcome outcomeOf(const std::string& attack, const RawControlClient& client) {
  Outcome o;
  o.attack = attack;
  o.closed = client.closed();
  o.lifetime = client.lifetime();
  o.errorCode = client.errorCode();
  o.reset = client.reset();
  return o;
}

// Reads until the agent closes or `until`.
Outcome observe(const std::string& attack, RawControlClient& client, Deadline until) {
  client.readUntil(until);
  return outcomeOf(attack, client);
}

std::vector<std::uint8_t> header(std::uint32_t magic, std::uint16_t version, std::uint16_t type,
                                 std::uint32_t length) {
  std::vector<std::uint8_t> bytes;
  for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back((magic >> shift) & 0xff);
  bytes.push_back(version >> 8);
  bytes.push_back(version & 0xff);
  bytes.push_back(type >> 8);
  bytes.push_back(type & 0xff);
  for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back((length >> shift) & 0xff);
  return bytes;
}

std::vector<std::uint8_t> withPayload(std::vector<std::uint8_t> bytes, const std::string& text) {
  bytes.insert(bytes.end(), text.begin(), text.end());
  return bytes;
}

std::vector<std::uint8_t> garbage() {
  std::vector<std::uint8_t> bytes = withPayload({}, "GET / HTTP/1.1\r\nHost: kvx\r\n\r\n");
  std::mt19937 random(7);
  while (bytes.size() < 4096) bytes.push_back(static_cast<std::uint8_t>(random()));
  return bytes;
}

std::vector<std::uint8_t> unauthenticatedHello() {
  engine::PeerMetadata metadata;
  metadata.name = "intruder";
  metadata.incarnation = 1;
  metadata.transport = "ucx";
  return channel::encodeMessage(channel::Hello{metadata, "prefill", 2000});
}

// Sends `bytes` (then half-closes if `thenClose`) and reads until the agent closes.
Outcome sendAndObserve(const std::string& attack, const std::string& address,
                       const std::vector<std::uint8_t>& bytes, bool thenClose) {
  std::string why;
  auto client = RawControlClient::connect(address, "127.0.0.1", deadlineIn(5s), why);
  if (!client) return Outcome{attack, why};
  const Deadline until = deadlineIn(kPromptClose);
  (void)client->send(bytes, until);  // the agent may close before taking it all
  if (thenClose) client->shutdownWrite();
  return observe(attack, *client, until);
}

// Answers the challenge with a proof made from another token.
Outcome wrongToken(const std::string& address) {
  const std::string attack = "wrong token";
  std::string why;
  auto client = RawControlClient::connect(address, "127.0.0.1", deadlineIn(5s), why);
  if (!client) return Outcome{attack, why};
  const Deadline until = deadlineIn(kPromptClose);
  auto nonce = channel::randomNonce();
  if (!nonce.isOk()) return Outcome{attack, nonce.status().toString()};
  client->send(channel::encodeMessage(channel::AuthBegin{*nonce}), until);
  auto frame = client->readFrame(until);
  auto message = frame ? channel::decodeMessage(*frame) : Result<channel::Message>(timedOut(""));
  const auto* challenge = message.isOk() ? std::get_if<channel::AuthChallenge>(&*message) : nullptr;
  if (challenge == nullptr) return Outcome{attack, "no auth_challenge in reply to auth_begin"};
  // The agent proved it holds the real token, which the wrong one cannot confirm.
  if (!channel::proofMatches(channel::serverProof(kToken, *nonce, challenge->nonce),
                             challenge->proof)) {
    return Outcome{attack, "the agent's proof does not match its token"};
  }
  const std::string wrong = "not-the-right-token-at-all";
  client->send(channel::encodeMessage(
                   channel::AuthResponse{channel::clientProof(wrong, challenge->nonce, *nonce)}),
               until);
  return observe(attack, *client, until);
}

// Connects and then sends nothing, or one byte of a frame every 300 ms, or stops after
// auth_begin: only the handshake deadline ends these.
Outcome slowloris(const std::string& attack, const std::string& address) {
  std::string why;
  auto client = RawControlClient::connect(address, "127.0.0.1", deadlineIn(5s), why);
  if (!client) return Outcome{attack, why};
  const Deadline until = deadlineIn(kHandshake + kDeadlineSlack + 1s);
  auto nonce = channel::randomNonce();
  if (!nonce.isOk()) return Outcome{attack, nonce.status().toString()};
  const std::vector<std::uint8_t> frame = channel::encodeMessage(channel::AuthBegin{*nonce});
  if (attack == "slowloris (stalls after auth_begin)") {
    client->send(frame, until);
    if (!client->readFrame(until)) return Outcome{attack, "no auth_challenge"};
  } else if (attack == "slowloris (dribbles)") {
    for (std::size_t i = 0; i < frame.size() && !client->closed() && Clock::now() < until; ++i) {
      client->send(std::span(&frame[i], 1), until);
      client->readUntil(deadlineIn(300ms));
    }
  }
  return observe(attack, *client, until);
}

// Phase one: every kind of attack at once, the prompt ones kRepeats times each.
std::vector<Outcome> attackAll(const std::string& address) {
  std::vector<std::function<Outcome()>> attacks = {
      [&] { return sendAndObserve("garbage", address, garbage(), false); },
      [&] {
        const std::string part(100, 'x');
        return sendAndObserve("truncated frame", address,
                              withPayload(header(channel::kFrameMagic, 1, 7, 1000), part), true);
      },
      [&] {
        return sendAndObserve(
            "oversized frame", address,
            withPayload(header(channel::kFrameMagic, 1, 7, channel::kDefaultMaxFrameBytes + 1),
                        std::string(65536, '{')),
            false);
      },
      [&] {
        return sendAndObserve("wrong version", address,
                              withPayload(header(channel::kFrameMagic, 99, 7, 2), "{}"), false);
      },
      [&] {
        return sendAndObserve("unknown type", address,
                              withPayload(header(channel::kFrameMagic, 1, 0x7777, 2), "{}"), false);
      },
      [&] { return sendAndObserve("hello without auth", address, unauthenticatedHello(), false); },
      [&] { return wrongToken(address); },
  };
  std::mutex mutex;
  std::vector<Outcome> outcomes;
  std::vector<std::jthread> threads;
  for (const auto& attack : attacks) {
    threads.emplace_back([&mutex, &outcomes, attack] {
      for (int i = 0; i < kRepeats; ++i) {
        Outcome outcome = attack();
        std::lock_guard lock(mutex);
        outcomes.push_back(std::move(outcome));
      }
    });
  }
  for (const char* name : {"slowloris (silent)", "slowloris (silent)", "slowloris (dribbles)",
                           "slowloris (dribbles)", "slowloris (stalls after auth_begin)"}) {
    threads.emplace_back([&mutex, &outcomes, &address, name] {
      Outcome outcome = slowloris(name, address);
      std::lock_guard lock(mutex);
      outcomes.push_back(std::move(outcome));
    });
  }
  threads.clear();  // joins
  return outcomes;
}

// Phase two: kPerAddress + kFloodExtra silent connections from 127.0.0.2. The first
// kFloodAdmitted are admitted and held until the handshake deadline; the rest are refused.
std::vector<Outcome> flood(const std::string& address) {
  std::vector<RawControlClient> clients;
  std::vector<Outcome> outcomes;
  for (std::uint32_t i = 0; i < kPerAddress + kFloodExtra; ++i) {
    std::string why;
    auto client = RawControlClient::connect(address, "127.0.0.2", deadlineIn(5s), why);
    if (!client) {
      outcomes.push_back(Outcome{"flood", why});
      return outcomes;
    }
    clients.push_back(std::move(*client));
  }
  RawControlClient::readAllUntil(clients, deadlineIn(kHandshake + kDeadlineSlack + 1s));
  for (const RawControlClient& client : clients) outcomes.push_back(outcomeOf("flood", client));
  return outcomes;
}

void checkPrompt(const Outcome& o, const std::string& code) {
  INFO(o.attack << ": closed " << o.closed << " after " << o.lifetime.count() << " ms, error '"
                << o.errorCode << "', reset " << o.reset);
  CHECK(o.closed);
  CHECK(o.lifetime <= kPromptClose);
  // A reset may swallow the ErrorMessage when the agent closes with bytes still unread.
  CHECK((o.errorCode == code || (o.reset && o.errorCode.empty())));
}

void checkHandshakeDeadline(const Outcome& o) {
  INFO(o.attack << ": closed " << o.closed << " after " << o.lifetime.count() << " ms, error '"
                << o.errorCode << "'");
  CHECK(o.closed);
  CHECK(o.lifetime >= kHandshake - 200ms);
  CHECK(o.lifetime <= kHandshake + kDeadlineSlack);
  CHECK(o.errorCode == "TIMED_OUT");
}

}  // namespace

TEST_CASE("hostile clients on the control port do not disturb live transfers", "[fault]") {
  // Both agents authenticate with it: the decode process inherits it, the prefill agent
  // reads it when its options name no token.
  REQUIRE(::setenv("KVX_AUTH_TOKEN", kToken.c_str(), 1) == 0);
  const ScratchDir scratch;
  const std::string& dir = scratch.path();
  DecodeProcess decode = startDecode("decode", "shm", 512, dir + "/hostile-decode.log");
  INFO("decode agent log " << decode.log);
  auto created = KvAgent::create(prefillOptions("prefill", "shm", 512));
  REQUIRE(created.isOk());
  KvAgent& prefill = **created;
  REQUIRE(prefill.connect(decode.address, deadlineIn(10s)).isOk());

  std::vector<Outcome> outcomes;
  std::atomic<bool> attacksDone{false};
  std::jthread attacker([&] {
    outcomes = attackAll(decode.address);
    // Closed as the clients saw it; the agent forgets a link a moment later.
    std::this_thread::sleep_for(200ms);
    std::vector<Outcome> floodOutcomes = flood(decode.address);
    outcomes.insert(outcomes.end(), floodOutcomes.begin(), floodOutcomes.end());
    attacksDone = true;
  });
  RequestStream stream(prefill, "decode", "live", 4, 8, 1);
  const Deadline streamEnd = deadlineIn(60s);
  while (!attacksDone && Clock::now() < streamEnd) stream.pump();
  REQUIRE(attacksDone);
  attacker.join();
  REQUIRE(stream.drain(deadlineIn(20s)));

  std::map<std::string, int> attacks;
  int admitted = 0;
  int refused = 0;
  for (const Outcome& o : outcomes) {
    ++attacks[o.attack];
    INFO(o.attack << ": " << o.failure);
    REQUIRE(o.failure.empty());
    if (o.attack.rfind("slowloris", 0) == 0) {
      checkHandshakeDeadline(o);
    } else if (o.attack == "flood") {
      // Admitted: silent until the handshake deadline. Refused: told at once.
      if (o.errorCode == "TIMED_OUT") {
        ++admitted;
        checkHandshakeDeadline(o);
      } else {
        ++refused;
        checkPrompt(o, "RESOURCE_EXHAUSTED");
      }
    } else if (o.attack == "truncated frame") {
      // The agent sees EOF mid-frame: it closes without a word.
      INFO("truncated frame: closed " << o.closed << " after " << o.lifetime.count() << " ms");
      CHECK(o.closed);
      CHECK(o.lifetime <= kPromptClose);
    } else if (o.attack == "hello without auth" || o.attack == "wrong token") {
      checkPrompt(o, "UNAUTHENTICATED");
    } else {
      checkPrompt(o, "PROTOCOL_ERROR");
    }
  }
  CHECK(attacks.size() == 11);
  CHECK(admitted == static_cast<int>(kFloodAdmitted));
  CHECK(refused == static_cast<int>(kPerAddress + kFloodExtra - kFloodAdmitted));

  // The real requests: all completed, none failed.
  for (const std::string& failure : stream.failures()) FAIL_CHECK("real request " << failure);
  REQUIRE(stream.completed().size() >= 20);
  CHECK(processRunning(decode.pid()));

  // A fresh prefill agent connects and transfers.
  KvAgentOptions options = prefillOptions("prefill-late", "shm", 64);
  auto late = KvAgent::create(options);
  REQUIRE(late.isOk());
  REQUIRE((*late)->connect(decode.address, deadlineIn(10s)).isOk());
  for (int i = 0; i < 3; ++i) {
    const std::string id = "late-" + std::to_string(i);
    REQUIRE((*late)->submit(makeRequest(**late, id, 3 * kTokensPerBlock, "decode", false)).isOk());
    auto done = (*late)->wait(id, deadlineIn(20s));
    INFO(id << ": " << (done.isOk() ? "released" : done.status().toString()));
    REQUIRE(done.isOk());
  }

  // The decode agent verified every block it received, and received every request.
  const nlohmann::json stats = decode.stop();
  INFO("decode agent STATS " << stats.dump());
  CHECK(stats["corruptBlocks"] == 0);
  CHECK(stats["lateWrites"] == 0);
  CHECK(stats["blocksVerified"] == stats["blocks"]);
  CHECK(stats["arrivals"] == stream.completed().size() + 3);
  CHECK(stats["blocks"] == stream.completedBlocks() + 9);
  const std::string log = decode.logText();
  for (const std::string& id : stream.completed()) {
    CHECK(log.find("arrival " + id + " ") != std::string::npos);
  }
  CHECK(log.find("CORRUPT") == std::string::npos);
  std::printf(
      "hostile clients: %zu hostile connections (%d flood, %d admitted until the %lld ms "
      "handshake deadline, %d refused) all closed by the agent; %zu live requests (%llu blocks) "
      "completed and verified meanwhile, then 3 from a new prefill agent\n",
      outcomes.size(), admitted + refused, admitted, static_cast<long long>(kHandshake.count()),
      refused, stream.completed().size(),
      static_cast<unsigned long long>(stream.completedBlocks()));
  std::fflush(stdout);
}
