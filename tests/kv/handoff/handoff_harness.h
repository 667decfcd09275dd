#pragma once

// HandoffHarness: prefill and decode state machines (PrefillSide, DecodeSide) wired to a
// FakeNetwork the way kv_agent_impl.cc wires them to a real agent: a completed handshake
// calls onPeerReady on both sides, messages from peers without one are dropped, and tick()
// runs onTick and then reports every peer the network no longer links with onPeerGone, as
// the agent's departure events would.
// Also: source blocks filled with a pattern per block ("content key"), checked byte for
// byte at the destination, and the end-of-test check that every block is free again.
//
// Threads: one; the test's. Uses Catch2 assertions.

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kv/handoff/decode_side.h"
#include "kv/handoff/prefill_side.h"
#include "tests/kv/handoff/fake_kv_port.h"

namespace kvx::test::handoff {

using namespace std::chrono_literals;
using kv::handoff::DecodeSide;
using kv::handoff::PrefillSide;
using kv::handoff::RequestBoard;
using kv::handoff::SideContext;

// "PUSH" or "PULL", for what a test prints.
inline const char* modeName(KvMode mode) { return mode == KvMode::kPush ? "PUSH" : "PULL"; }

// One agent: its pool, its published view and its state machine.
struct Side {
  Side(std::string n, KvRole r, std::uint64_t blocks, kv::ModelShape shape)
      : name(std::move(n)), role(r), pool(blocks, std::move(shape)) {}

  std::string name;
  KvRole role = KvRole::kPrefill;
  FakePool pool;
  RequestBoard board;
  std::unique_ptr<SideContext> context;
  std::unique_ptr<PrefillSide> prefill;
  std::unique_ptr<DecodeSide> decode;
  std::set<std::string> peers;    // handshake done (the agent's KvPeerDirectory)
  std::uint64_t incarnation = 1;  // restart() draws the next
  // Whether the process of this incarnation has ended (endProcess()).
  std::shared_ptr<bool> processEnded = std::make_shared<bool>(false);
  std::map<std::string, KvArrival> arrivals;  // taken from the board by takeArrivals()
};

// The byte at `index` of segment (layer, kv) of a block whose content key is `key`.
inline std::uint8_t patternByte(std::uint64_t key, std::uint32_t layer, std::uint32_t kv,
                                std::size_t index) {
  std::uint64_t x =
      (key + 1) * 0x9E3779B97F4A7C15ull + layer * 0x100000001B3ull + kv * 0x51ull + index;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  return static_cast<std::uint8_t>(x >> 56);
}

class HandoffHarness {
 public:
  static KvAgentOptions defaultOptions() {
    KvAgentOptions options;
    options.requestTimeout = 30s;
    options.leaseTimeout = 30s;
    options.prefixChunkTokens = 8;  // 2 blocks of the tiny shape
    // The in-memory port delivers nothing late, and the harness's time does not pass by
    // itself: a lost PUSH peer's blocks come back at once (the hold is tested with real
    // agents, peer_stop_test and initiator_loss_test).
    options.lostPushHold = 0ms;
    return options;
  }

  Side& addPrefill(const std::string& name, std::uint64_t blocks,
                   KvAgentOptions options = defaultOptions(), kv::ModelShape shape = tinyShape()) {
    options.role = KvRole::kPrefill;
    Side& s = add(name, blocks, options, std::move(shape));
    s.prefill = std::make_unique<PrefillSide>(*s.context);
    return s;
  }
  Side& addDecode(const std::string& name, std::uint64_t blocks,
                  KvAgentOptions options = defaultOptions(), kv::ModelShape shape = tinyShape()) {
    options.role = KvRole::kDecode;
    Side& s = add(name, blocks, options, std::move(shape));
    s.decode = std::make_unique<DecodeSide>(*s.context);
    return s;
  }

  // The KV handshake between a prefill and a decode agent.
  void connect(const std::string& prefillName, const std::string& decodeName) {
    Side& p = side(prefillName);
    Side& d = side(decodeName);
    net_.link(p.name, d.name);
    REQUIRE(p.context->port.attachPool(d.name, d.pool.description(), true).isOk());
    REQUIRE(d.context->port.attachPool(p.name, p.pool.description(), false).isOk());
    p.peers.insert(d.name);
    d.peers.insert(p.name);
    p.prefill->onPeerReady(d.name, d.pool.blocks(), d.pool.allocator().freeBlocks(),
                           d.pool.description().shape.kvHeads);
    kv::handoff::PeerWriter writer;
    writer.incarnation = p.incarnation;
    writer.writesDirectly = net_.writesDirectly(p.name, d.name);
    writer.processEnded = [ended = p.processEnded] { return *ended; };
    writer.process = "fake process " + std::to_string(p.incarnation);
    d.decode->onPeerReady(p.name, std::move(writer));
  }

  // `name`'s process ends: the network drops its links and its moves stop (endProcess()).
  // Its state machine stays for the test to look at; restart() gives it a new incarnation.
  void endProcess(const std::string& name) {
    Side& s = side(name);
    *s.processEnded = true;
    net_.endProcess(name);
  }
  // The agent comes back as a new incarnation, with a fresh state machine over the same pool.
  void restart(const std::string& name) {
    Side& s = side(name);
    ++s.incarnation;
    s.processEnded = std::make_shared<bool>(false);
    s.peers.clear();
    if (s.prefill) s.prefill = std::make_unique<PrefillSide>(*s.context);
    if (s.decode) s.decode = std::make_unique<DecodeSide>(*s.context);
  }

  // As the agent's tick: deadlines, then peers the data path lost.
  void tick() {
    for (auto& [name, s] : sides_) {
      if (s->prefill) s->prefill->onTick();
      if (s->decode) s->decode->onTick();
      const std::vector<std::string> live = net_.peersOf(name);
      std::vector<std::string> gone;
      for (const std::string& peer : s->peers) {
        if (std::find(live.begin(), live.end(), peer) == live.end()) gone.push_back(peer);
      }
      for (const std::string& peer : gone) {
        const Status why = peerFailed("the connection to '" + peer + "' was lost");
        s->peers.erase(peer);
        s->context->port.detachPool(peer);
        if (s->prefill) s->prefill->onPeerGone(peer, why);
        if (s->decode) s->decode->onPeerGone(peer, why);
      }
    }
  }

  // The link between `prefillName` and `decodeName` drops, and the decode side learns of it
  // (as tick() would tell it); the prefill side not yet.
  void dropLinkSeenByDecode(const std::string& prefillName, const std::string& decodeName) {
    net_.dropLink(prefillName, decodeName);
    Side& d = side(decodeName);
    d.peers.erase(prefillName);
    d.context->port.detachPool(prefillName);
    d.decode->onPeerGone(prefillName,
                         peerFailed("the connection to '" + prefillName + "' was lost"));
  }

  FakeNetwork& net() { return net_; }
  Side& side(const std::string& name) { return *sides_.at(name); }
  bool settle(std::size_t maxSteps = 20000) { return net_.settle(maxSteps); }

  // A request over `tokens` tokens whose source blocks are allocated on `p` and filled:
  // block i with content key keys[i] (default: distinct keys). The caller submits it; if
  // submit() fails the caller still owns the blocks (see freeSource()).
  KvRequestSpec request(Side& p, const std::string& id, std::uint64_t tokens,
                        std::vector<std::uint64_t> keys = {}) {
    const std::uint64_t blocks = p.pool.description().shape.blocksForTokens(tokens);
    if (keys.empty()) {
      for (std::uint64_t i = 0; i < blocks; ++i) keys.push_back(nextKey_++);
    }
    REQUIRE(keys.size() == blocks);
    auto extents = p.pool.allocator().allocate(blocks);
    REQUIRE(extents.isOk());
    KvRequestSpec spec;
    spec.id = id;
    spec.tokens = tokens;
    spec.sourceBlocks = kv::expandExtents(*extents);
    for (std::size_t i = 0; i < blocks; ++i) fill(p.pool, spec.sourceBlocks[i], keys[i]);
    keys_[id] = std::move(keys);
    return spec;
  }
  void freeSource(Side& p, const KvRequestSpec& spec) {
    REQUIRE(p.pool.allocator().free(kv::compressBlocks(spec.sourceBlocks)).isOk());
  }
  const std::vector<std::uint64_t>& keys(const std::string& id) const { return keys_.at(id); }

  static void fill(FakePool& pool, std::uint64_t block, std::uint64_t key) {
    for (std::uint32_t l = 0; l < pool.layers(); ++l) {
      for (std::uint32_t kv = 0; kv < pool.kvCount(); ++kv) {
        auto segment = pool.segment(block, l, kv);
        for (std::size_t i = 0; i < segment.size(); ++i) segment[i] = patternByte(key, l, kv, i);
      }
    }
  }
  // Segments of `block` in layers [first, first + count) that do not hold `key`'s pattern.
  static std::size_t mismatches(FakePool& pool, std::uint64_t block, std::uint64_t key,
                                std::uint32_t first = 0, std::uint32_t count = ~0u) {
    std::size_t bad = 0;
    for (std::uint32_t l = first; l < pool.layers() && l - first < count; ++l) {
      for (std::uint32_t kv = 0; kv < pool.kvCount(); ++kv) {
        auto segment = pool.segment(block, l, kv);
        for (std::size_t i = 0; i < segment.size(); ++i) {
          if (segment[i] != patternByte(key, l, kv, i)) {
            ++bad;
            break;
          }
        }
      }
    }
    return bad;
  }

  // Moves every arrival published on `d`'s board into d.arrivals.
  static void takeArrivals(Side& d) {
    while (true) {
      auto arrival = d.board.nextArrival(Clock::now());
      if (!arrival.isOk()) return;
      d.arrivals[arrival->id] = *arrival;
    }
  }
  // Checks that request `id` arrived on `d` with every byte of its source; returns the
  // arrival.
  KvArrival verifyArrived(Side& d, const std::string& id) {
    takeArrivals(d);
    REQUIRE(d.arrivals.contains(id));
    const KvArrival& arrival = d.arrivals.at(id);
    const auto& k = keys_.at(id);
    REQUIRE(arrival.blocks.size() == k.size());
    std::size_t bad = 0;
    for (std::size_t i = 0; i < k.size(); ++i) bad += mismatches(d.pool, arrival.blocks[i], k[i]);
    CHECK(bad == 0);
    return arrival;
  }
  // The server takes request `id` from `d` and gives its blocks back.
  static void consumeAndRelease(Side& d, const std::string& id) {
    REQUIRE(d.decode->consume(id).isOk());
    REQUIRE(d.decode->release(id).isOk());
    d.arrivals.erase(id);
  }

  static std::optional<KvRequestState> state(Side& s, const std::string& id) {
    auto status = s.board.get(id);
    if (!status) return std::nullopt;
    return status->state;
  }
  static KvRequestStatus status(Side& s, const std::string& id) {
    auto st = s.board.get(id);
    REQUIRE(st.has_value());
    return *st;
  }

  // The end of every test: nothing live, nothing moving, every block free, no violation.
  void expectClean() {
    CHECK(settle());
    for (auto& [name, s] : sides_) {
      if (s->decode) CHECK(s->decode->dropPrefixCache().isOk());
    }
    CHECK(settle());
    for (auto& [name, s] : sides_) {
      INFO("side " << name);
      CHECK((s->prefill ? s->prefill->liveRequests() : s->decode->liveRequests()) == 0);
      CHECK(s->pool.allocator().freeBlocks() == s->pool.blocks());
    }
    CHECK(net_.movesInFlight() == 0);
    expectNoViolations();
  }
  // Reports each violation once.
  void expectNoViolations() {
    const auto& all = net_.violations();
    for (; violationsReported_ < all.size(); ++violationsReported_) {
      FAIL_CHECK(all[violationsReported_]);
    }
  }

 private:
  Side& add(const std::string& name, std::uint64_t blocks, const KvAgentOptions& options,
            kv::ModelShape shape) {
    auto s = std::make_unique<Side>(name, options.role, blocks, std::move(shape));
    Side* raw = s.get();
    FakeKvPort& port =
        net_.addEndpoint(name, s->pool, [raw](const std::string& from, const KvMessage& message) {
          if (!raw->peers.contains(from)) return;  // no KV handshake (or gone): dropped
          if (raw->prefill) raw->prefill->onMessage(from, message);
          if (raw->decode) raw->decode->onMessage(from, message);
        });
    s->context = std::make_unique<SideContext>(
        SideContext{name, port, s->pool.description(), s->pool.allocator(), s->board,
                    [this](std::function<void()> task) { net_.post(std::move(task)); }, options});
    return *sides_.emplace(name, std::move(s)).first->second;
  }

  FakeNetwork net_;
  std::map<std::string, std::unique_ptr<Side>> sides_;
  std::map<std::string, std::vector<std::uint64_t>> keys_;
  std::uint64_t nextKey_ = 1000;
  std::size_t violationsReported_ = 0;
};

}  // namespace kvx::test::handoff
