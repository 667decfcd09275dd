#pragma once

// FakeNetwork: a scriptable, single-threaded, deterministic stand-in for the data path
// between KV agents, for tests of the request state machines (PrefillSide, DecodeSide).
// Every endpoint has a FakePool (a BlockAllocator plus host bytes standing in for its KV
// pool) and a FakeKvPort (the KvPort the state machine uses).
//
// Nothing happens until the test asks. send() and move() queue events; post() queues a task
// for the service loops; deliverNext() delivers one event, runTask() runs one task, settle()
// alternates them until nothing is left. Delivery keeps the KvPort contract:
//   - messages from A to B arrive in the order A sent them (each channel is FIFO);
//   - a move first lands (its bytes are copied and its notification joins the channel
//     owner -> peer behind what was sent before) and only later completes (onDone runs), so a
//     message sent after a move completed is behind that move's data.
// Anything else may be reordered: messages of different channels, moves against each other,
// completions against messages (a local completion may come after the peer answered the
// move's notification).
//
// Scripting: the pick among eligible events (FIFO, LIFO or seeded random); holds (all
// landings, all completions, one channel); delays (a move lands only after N other
// deliveries); failures (chosen or random moves fail: they copy nothing, send no
// notification and complete with TRANSPORT_ERROR; or move() itself returns an error); and
// links that drop (peersOf() stops listing the peer, send() to it fails, queued messages
// between the two are lost, and their moves, even ones posted later, fail when they would
// land); writers that copy into a peer's pool themselves (writeDirectly(), as over shared
// memory: their writes to that peer still land after the link dropped, until they are
// cancelled or their process ends, endProcess()).
// Cancel: a cancelled move that has not landed copies nothing and completes with CANCELLED;
// cancelling a landed move changes nothing (it completes OK).
//
// Safety check: a move may touch its blocks from move() until it lands or, if it fails or
// is cancelled, until it completes (the contract's "once it has drained"), unless its link
// dropped first: the fake assumes that a transport whose endpoint to the peer failed moves
// no more bytes over it (a peersOf() change is how the sides learn of that), except a
// direct writer's writes, which only its own cancel or the end of its process stops. After every
// task and every delivery the network checks that no block a move may touch is free in its
// pool's allocator, and records a violation if one is; so does a landing that would copy
// into or out of a free block. A block freed while a peer may still write into it (or read
// from it) fails the test even if it is reallocated before the late write would land.
// (A block freed and reallocated inside one task is not seen; the state machines only
// allocate on a placement message, a step of its own.) Threads: one; the test's.
// MoveRecord is in fake_move_record.h.

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kv/handoff/kv_port.h"
#include "kv/pool/pool_description.h"
#include "tests/kv/handoff/fake_move_record.h"
#include "tests/kv/handoff/fake_pool.h"

namespace kvx::test::handoff {

using kv::handoff::KvMessage;
using kv::handoff::KvPort;
using kv::handoff::MoveId;
using kv::handoff::MoveResult;
using kv::handoff::MoveSpec;

enum class Order : std::uint8_t { kFifo, kLifo, kRandom };

class FakeNetwork;

class FakeKvPort final : public KvPort {
 public:
  FakeKvPort(FakeNetwork& network, std::string name) : network_(network), name_(std::move(name)) {}

  Status send(const std::string& peer, const KvMessage& message) override;
  Status attachPool(const std::string& peer, const kv::PoolDescription& pool,
                    bool readyNow) override;
  void detachPool(const std::string& peer) override;
  Result<MoveId> move(const MoveSpec& spec, std::function<void(MoveResult)> onDone) override;
  void cancel(MoveId move) override;
  void disconnect(const std::string& peer, const Status& why) override;

  bool attached(const std::string& peer) const { return attached_.contains(peer); }

 private:
  FakeNetwork& network_;
  std::string name_;
  std::set<std::string> attached_;
};

class FakeNetwork {
 public:
  using Handler = std::function<void(const std::string& from, const KvMessage& message)>;

  // REQUIRES: a new name; `pool` outlives the network. `handler` receives every message
  // delivered to `name`.
  FakeKvPort& addEndpoint(const std::string& name, FakePool& pool, Handler handler) {
    auto endpoint = std::make_unique<Endpoint>(Endpoint{&pool, std::move(handler), nullptr});
    endpoint->port = std::make_unique<FakeKvPort>(*this, name);
    return *endpoints_.emplace(name, std::move(endpoint)).first->second->port;
  }
  FakePool& pool(const std::string& name) { return *endpoints_.at(name)->pool; }

  void link(const std::string& a, const std::string& b) { links_.insert(key(a, b)); }
  // The link fails: see the header comment.
  void dropLink(const std::string& a, const std::string& b) {
    links_.erase(key(a, b));
    std::erase_if(events_, [&](const Event& e) {
      return e.kind == Kind::kMessage && key(e.from, e.to) == key(a, b);
    });
    for (auto& [id, m] : moves_) {
      if (!m.landed && key(m.owner, m.peer) == key(a, b) && !direct(m)) m.linkLost = true;
    }
  }
  // `writer`'s process copies into `target`'s pool itself (UCX over shared memory): its
  // writes to `target` land whether or not their link is up.
  void writeDirectly(const std::string& writer, const std::string& target) {
    directWriters_.insert({writer, target});
  }
  bool writesDirectly(const std::string& writer, const std::string& target) const {
    return directWriters_.contains({writer, target});
  }
  // `name`'s process ends: its links drop and none of its moves lands any more.
  void endProcess(const std::string& name) {
    for (const auto& [other, endpoint] : endpoints_) {
      if (other != name && linked(name, other)) dropLink(name, other);
    }
    for (auto& [id, m] : moves_) {
      if (!m.landed && m.owner == name) m.linkLost = true;
    }
  }
  bool linked(const std::string& a, const std::string& b) const {
    return links_.contains(key(a, b));
  }
  std::vector<std::string> peersOf(const std::string& name) const {
    std::vector<std::string> out;
    for (const auto& [other, endpoint] : endpoints_) {
      if (other != name && linked(name, other)) out.push_back(other);
    }
    return out;
  }

  // The service loops: one FIFO of tasks for every endpoint.
  void post(std::function<void()> task) { tasks_.push_back(std::move(task)); }

  // --- scripting ---
  void setOrder(Order order, std::uint64_t seed = 1) {
    order_ = order;
    rng_.seed(seed);
  }
  void holdLandings(bool hold) { holdLandings_ = hold; }
  void holdCompletions(bool hold) { holdCompletions_ = hold; }
  void holdChannel(const std::string& from, const std::string& to, bool hold) {
    if (hold) {
      heldChannels_.insert({from, to});
    } else {
      heldChannels_.erase({from, to});
    }
  }
  // Each later move lands only after `steps` other deliveries.
  void delayMoves(std::size_t steps) { moveDelay_ = steps; }
  // After the next `skip` moves, `count` moves fail when they would land.
  void failNextMoves(std::size_t count, std::size_t skip = 0) {
    failMoves_ = count;
    failSkip_ = skip;
  }
  // Each later move fails with this probability (drawn from the order's generator).
  void failMovesRandomly(double probability) { failProbability_ = probability; }
  // The next `count` move() calls return an error without posting anything.
  void failNextMoveCalls(std::size_t count) { failMoveCalls_ = count; }

  // --- driving ---
  bool runTask() {
    if (tasks_.empty()) return false;
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    task();
    checkTouching();
    return true;
  }
  // Delivers one eligible event; false when none is (all done, or all held).
  bool deliverNext() {
    std::vector<std::size_t> eligible = eligibleEvents();
    if (eligible.empty() &&
        std::any_of(events_.begin(), events_.end(), [](const Event& e) { return e.delay > 0; })) {
      for (Event& e : events_) e.delay = 0;  // nothing else can happen: time passes
      eligible = eligibleEvents();
    }
    if (eligible.empty()) return false;
    std::size_t pick = eligible.front();
    if (order_ == Order::kLifo) pick = eligible.back();
    if (order_ == Order::kRandom) {
      pick = eligible[std::uniform_int_distribution<std::size_t>(0, eligible.size() - 1)(rng_)];
    }
    Event event = std::move(events_[pick]);
    events_.erase(events_.begin() + static_cast<std::ptrdiff_t>(pick));
    for (Event& e : events_) {
      if (e.delay > 0) --e.delay;
    }
    process(event);
    checkTouching();
    return true;
  }
  // Runs tasks and delivers events until nothing is left or `maxSteps` steps were taken;
  // false in the second case (a livelock, or a script that never ends).
  bool settle(std::size_t maxSteps = 20000) {
    checkTouching();
    for (std::size_t steps = 0; steps < maxSteps; ++steps) {
      if (!runTask() && !deliverNext()) return true;
    }
    return false;
  }
  // As settle(), but stops as soon as `done()` holds; returns whether it does.
  bool settleUntil(const std::function<bool()>& done, std::size_t maxSteps = 20000) {
    checkTouching();
    for (std::size_t steps = 0; steps < maxSteps && !done(); ++steps) {
      if (!runTask() && !deliverNext()) break;
    }
    return done();
  }

  // --- observation ---
  const std::vector<std::string>& violations() const { return violations_; }
  std::uint64_t bytesCopied() const { return bytesCopied_; }
  const std::map<MoveId, MoveRecord>& moves() const { return moves_; }
  std::size_t movesInFlight() const {
    return static_cast<std::size_t>(std::count_if(
        moves_.begin(), moves_.end(), [](const auto& m) { return !m.second.completed; }));
  }
  std::size_t pendingEvents() const { return events_.size() + tasks_.size(); }
  // How many messages of type T were sent (notifications included), from `from` if given.
  template <typename T>
  std::size_t sent(const std::string& from = "") const {
    const std::size_t index = KvMessage(T{}).index();
    return static_cast<std::size_t>(
        std::count_if(sentLog_.begin(), sentLog_.end(), [&](const auto& entry) {
          return entry.second == index && (from.empty() || entry.first == from);
        }));
  }

 private:
  friend class FakeKvPort;
  enum class Kind : std::uint8_t { kMessage, kLand, kComplete };
  struct Event {
    Kind kind = Kind::kMessage;
    std::string from, to;  // messages
    std::string payload;
    MoveId move = 0;  // landings and completions
    std::size_t delay = 0;
  };
  struct Endpoint {
    FakePool* pool;
    Handler handler;
    std::unique_ptr<FakeKvPort> port;
  };

  static std::pair<std::string, std::string> key(const std::string& a, const std::string& b) {
    return a < b ? std::pair(a, b) : std::pair(b, a);
  }
  bool direct(const MoveRecord& m) const {
    return m.op == TransferOp::kWrite && directWriters_.contains({m.owner, m.peer});
  }

  Status send(const std::string& from, const std::string& to, const KvMessage& message) {
    if (!linked(from, to)) return peerFailed("fake: no link from '" + from + "' to '" + to + "'");
    sentLog_.emplace_back(from, message.index());
    events_.push_back(Event{Kind::kMessage, from, to, kv::handoff::encode(message), 0, 0});
    return Status::ok();
  }

  Result<MoveId> move(const std::string& owner, MoveRecord record) {
    if (failMoveCalls_ > 0) {
      --failMoveCalls_;
      return transportError("fake: move() refused by the script");
    }
    FakePool& local = *endpoints_.at(owner)->pool;
    FakePool& remote = *endpoints_.at(record.peer)->pool;
    if (record.local.empty() || record.local.size() != record.remote.size() ||
        record.layerCount == 0 || record.firstLayer + record.layerCount > local.layers()) {
      return invalidArgument("fake: malformed move");
    }
    for (std::size_t i = 0; i < record.local.size(); ++i) {
      if (record.local[i] >= local.blocks() || record.remote[i] >= remote.blocks()) {
        return invalidArgument("fake: move block pair " + std::to_string(i) + " out of range");
      }
    }
    record.id = nextMove_++;
    record.owner = owner;
    // Posted, fails when it would land (a direct writer's copy lands all the same).
    record.linkLost = !linked(owner, record.peer) && !directWriters_.contains({owner, record.peer});
    const bool randomFail =
        failProbability_ > 0 && std::bernoulli_distribution(failProbability_)(rng_);
    const bool scripted = failMoves_ > 0 && failSkip_ == 0;
    if (failMoves_ > 0 && failSkip_ > 0) --failSkip_;
    if (scripted || randomFail) {
      if (scripted) --failMoves_;
      record.failWith = transportError("fake: move " + std::to_string(record.id) + " failed");
    }
    const MoveId id = record.id;
    moves_.emplace(id, std::move(record));
    events_.push_back(Event{Kind::kLand, "", "", "", id, moveDelay_});
    return id;
  }

  void cancel(MoveId id) {
    auto it = moves_.find(id);
    if (it != moves_.end() && !it->second.landed) it->second.cancelRequested = true;
  }

  std::vector<std::size_t> eligibleEvents() const {
    std::vector<std::size_t> out;
    std::set<std::pair<std::string, std::string>> channelsSeen;
    for (std::size_t i = 0; i < events_.size(); ++i) {
      const Event& e = events_[i];
      bool ok = e.delay == 0;
      if (e.kind == Kind::kMessage) {
        const bool head = channelsSeen.insert({e.from, e.to}).second;
        ok = ok && head && !heldChannels_.contains({e.from, e.to});
      } else if (e.kind == Kind::kLand) {
        ok = ok && !holdLandings_;
      } else {
        ok = ok && !holdCompletions_;
      }
      if (ok) out.push_back(i);
    }
    return out;
  }

  void process(const Event& e) {
    if (e.kind == Kind::kMessage) {
      auto message = kv::handoff::decode(e.payload);
      if (!message.isOk()) {
        violations_.push_back("undecodable message '" + e.payload +
                              "': " + message.status().toString());
        return;
      }
      endpoints_.at(e.to)->handler(e.from, *message);
      return;
    }
    MoveRecord& m = moves_.at(e.move);
    if (e.kind == Kind::kLand) return land(m);
    m.completed = true;
    TransferStats stats;
    stats.descriptors = m.local.size() * m.layerCount * pool(m.owner).kvCount();
    stats.operations = m.aborted ? 0 : 1;
    stats.bytes = m.bytes;
    auto onDone = std::move(m.onDone);
    onDone(MoveResult{m.status, stats});
  }

  void land(MoveRecord& m) {
    if (m.cancelRequested) {
      m.status = cancelled("fake: move " + std::to_string(m.id) + " cancelled");
    } else if (!m.failWith.isOk()) {
      m.status = m.failWith;
    } else if (m.linkLost || (!linked(m.owner, m.peer) && !direct(m))) {
      m.status = transportError("fake: the link to '" + m.peer + "' failed");
    }
    if (!m.status.isOk()) {
      m.aborted = true;
      events_.push_back(Event{Kind::kComplete, "", "", "", m.id, 0});
      return;
    }
    FakePool& local = pool(m.owner);
    FakePool& remote = pool(m.peer);
    const bool write = m.op == TransferOp::kWrite;
    FakePool& src = write ? local : remote;
    FakePool& dst = write ? remote : local;
    for (std::size_t i = 0; i < m.local.size(); ++i) {
      const std::uint64_t from = write ? m.local[i] : m.remote[i];
      const std::uint64_t to = write ? m.remote[i] : m.local[i];
      if (src.allocator().isFree(from) || dst.allocator().isFree(to)) {
        violations_.push_back("move " + std::to_string(m.id) + " landed on a free block (" +
                              std::to_string(from) + " -> " + std::to_string(to) + ")");
      }
      for (std::uint32_t l = m.firstLayer; l < m.firstLayer + m.layerCount; ++l) {
        for (std::uint32_t kv = 0; kv < local.kvCount(); ++kv) {
          m.bytes += copySegment(m, src.segment(from, l, kv), dst.segment(to, l, kv), src, dst);
        }
      }
    }
    bytesCopied_ += m.bytes;
    m.landed = true;
    if (m.notification && linked(m.owner, m.peer)) {
      sentLog_.emplace_back(m.owner, kv::handoff::decode(*m.notification)->index());
      events_.push_back(Event{Kind::kMessage, m.owner, m.peer, *m.notification, 0, 0});
    }
    events_.push_back(Event{Kind::kComplete, "", "", "", m.id, 0});
  }

  // Copies a segment (token-major), or the move's head slice of it; returns the bytes.
  static std::uint64_t copySegment(const MoveRecord& m, std::span<std::uint8_t> from,
                                   std::span<std::uint8_t> to, const FakePool& src,
                                   const FakePool& dst) {
    if (m.heads.whole()) {
      std::copy(from.begin(), from.end(), to.begin());
      return from.size();
    }
    const bool write = m.op == TransferOp::kWrite;
    const std::uint32_t fromFirst = write ? m.heads.localFirst : m.heads.remoteFirst;
    const std::uint32_t toFirst = write ? m.heads.remoteFirst : m.heads.localFirst;
    const auto& shape = src.description().shape;
    const std::uint64_t headBytes = std::uint64_t{shape.headDim} * shape.dtypeBytes;
    const std::uint64_t fromToken = src.description().shape.tokenBytes();
    const std::uint64_t toToken = dst.description().shape.tokenBytes();
    const std::uint64_t piece = m.heads.count * headBytes;
    for (std::uint32_t t = 0; t < shape.tokensPerBlock; ++t) {
      auto begin =
          from.begin() + static_cast<std::ptrdiff_t>(t * fromToken + fromFirst * headBytes);
      std::copy(begin, begin + static_cast<std::ptrdiff_t>(piece),
                to.begin() + static_cast<std::ptrdiff_t>(t * toToken + toFirst * headBytes));
    }
    return piece * shape.tokensPerBlock;
  }

  void checkTouching() {
    for (const auto& [id, m] : moves_) {
      if (!m.touching()) continue;
      for (std::size_t i = 0; i < m.local.size(); ++i) {
        checkBlock(m, m.owner, m.local[i]);
        checkBlock(m, m.peer, m.remote[i]);
      }
    }
  }
  void checkBlock(const MoveRecord& m, const std::string& side, std::uint64_t block) {
    if (!pool(side).allocator().isFree(block) || !reported_.insert({m.id, side, block}).second) {
      return;
    }
    violations_.push_back("block " + std::to_string(block) + " of '" + side +
                          "' is free while move " + std::to_string(m.id) + " (" + m.owner +
                          (m.op == TransferOp::kWrite ? " writes to " : " reads from ") + m.peer +
                          ") may still touch it");
  }

  std::map<std::string, std::unique_ptr<Endpoint>> endpoints_;
  std::set<std::pair<std::string, std::string>> links_;
  std::set<std::pair<std::string, std::string>> directWriters_;  // (writer, target)
  std::deque<std::function<void()>> tasks_;
  std::deque<Event> events_;
  std::map<MoveId, MoveRecord> moves_;
  MoveId nextMove_ = 1;
  Order order_ = Order::kFifo;
  std::mt19937_64 rng_{1};
  bool holdLandings_ = false;
  bool holdCompletions_ = false;
  std::set<std::pair<std::string, std::string>> heldChannels_;
  std::size_t moveDelay_ = 0;
  std::size_t failMoves_ = 0;
  std::size_t failSkip_ = 0;
  double failProbability_ = 0;
  std::size_t failMoveCalls_ = 0;
  std::vector<std::pair<std::string, std::size_t>> sentLog_;
  std::vector<std::string> violations_;
  std::set<std::tuple<MoveId, std::string, std::uint64_t>> reported_;
  std::uint64_t bytesCopied_ = 0;
};

inline Status FakeKvPort::send(const std::string& peer, const KvMessage& message) {
  return network_.send(name_, peer, message);
}

inline Status FakeKvPort::attachPool(const std::string& peer, const kv::PoolDescription& pool,
                                     bool) {
  if (pool.blocks != network_.pool(peer).blocks()) {
    return invalidArgument("fake: the description of '" + peer + "' does not match its pool");
  }
  attached_.insert(peer);
  return Status::ok();
}

inline void FakeKvPort::detachPool(const std::string& peer) { attached_.erase(peer); }

inline Result<MoveId> FakeKvPort::move(const MoveSpec& spec,
                                       std::function<void(MoveResult)> onDone) {
  if (!attached(spec.peer)) return notFound("fake: no pool of '" + spec.peer + "' is attached");
  MoveRecord record;
  record.peer = spec.peer;
  record.op = spec.op;
  record.local.assign(spec.localBlocks.begin(), spec.localBlocks.end());
  record.remote.assign(spec.remoteBlocks.begin(), spec.remoteBlocks.end());
  record.firstLayer = spec.firstLayer;
  record.layerCount = spec.layerCount;
  record.heads = spec.heads;
  if (spec.notification) record.notification = kv::handoff::encode(*spec.notification);
  record.onDone = std::move(onDone);
  return network_.move(name_, std::move(record));
}

inline void FakeKvPort::cancel(MoveId move) { network_.cancel(move); }

inline void FakeKvPort::disconnect(const std::string& peer, const Status& /*why*/) {
  network_.dropLink(name_, peer);
}

}  // namespace kvx::test::handoff
