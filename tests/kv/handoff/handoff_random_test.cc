// kvx-test-labels: unit serial
// Many requests under seeded random schedules: delivery order, delayed moves, failed
// moves, cancels, layer hand-overs at random moments and a decode agent that may die.
// Whatever happens, a request the prefill side released arrived intact, every request
// ends, no block is freed while a move may touch it, and every block comes back.
#include <catch2/catch.hpp>
#include <random>

#include "tests/kv/handoff/handoff_harness.h"

using namespace kvx;
using namespace kvx::test::handoff;

namespace {

struct Live {
  std::string id;
  bool layerwise = false;
  std::vector<bool> handed;
};

struct Outcome {
  int released = 0;
  int failed = 0;
};

// Runs one schedule and checks how it ended.
Outcome runSchedule(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto chance = [&](double p) { return std::bernoulli_distribution(p)(rng); };
  const auto pick = [&](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  HandoffHarness h;
  Side& p = h.addPrefill("p", 96);
  Side& d1 = h.addDecode("d1", 24);
  Side& d2 = h.addDecode("d2", 24);
  h.connect("p", "d1");
  h.connect("p", "d2");
  h.net().setOrder(Order::kRandom, seed);
  h.net().failMovesRandomly(0.08);
  h.net().delayMoves(pick(4));
  const bool dropD2 = seed % 3 == 0;
  // Every arrival is checked the moment it is published: its data must be in place then.
  std::set<std::string> verified;
  const auto step = [&] {
    const bool progressed = h.net().runTask() || h.net().deliverNext();
    for (Side* d : {&d1, &d2}) {
      HandoffHarness::takeArrivals(*d);
      for (const auto& [id, arrival] : d->arrivals) {
        if (verified.insert(id).second) h.verifyArrived(*d, id);
      }
    }
    return progressed;
  };
  std::vector<Live> requests;
  for (int round = 0; round < 60; ++round) {
    if (requests.size() < 14 && chance(0.3)) {
      Live r{"r" + std::to_string(requests.size()), chance(0.5), std::vector<bool>(4, false)};
      KvRequestSpec spec = h.request(p, r.id, 1 + pick(40));
      spec.mode = chance(0.5) ? KvMode::kPush : KvMode::kPull;
      spec.layerwise = r.layerwise;
      REQUIRE(p.prefill->submit(spec).isOk());
      requests.push_back(std::move(r));
    }
    if (!requests.empty() && chance(0.3)) {
      Live& r = requests[pick(requests.size())];
      const std::uint32_t layer = static_cast<std::uint32_t>(pick(4));
      if (r.layerwise && !r.handed[layer]) {
        r.handed[layer] = true;
        (void)p.prefill->layerReady(r.id, layer);  // NOT_FOUND once it ended
      }
    }
    if (!requests.empty() && chance(0.04)) {
      (void)p.prefill->cancel(requests[pick(requests.size())].id, cancelled("random cancel"));
    }
    if (dropD2 && round == 30) h.net().dropLink("p", "d2");
    if (chance(0.2)) h.tick();
    for (std::size_t steps = pick(12); steps > 0 && step(); --steps) {
    }
  }
  for (Live& r : requests) {
    for (std::uint32_t l = 0; l < 4; ++l) {
      if (r.layerwise && !r.handed[l]) (void)p.prefill->layerReady(r.id, l);
    }
  }
  h.tick();
  // The server takes whatever arrived, which makes room for what waits, until all ended.
  // An arrival that failed after it was published (an abort crossing the confirmation, see
  // handoff_abort_race_test.cc) is no longer the server's to release.
  bool idle = false;
  for (int pass = 0; pass < 50 && !(idle && p.prefill->liveRequests() == 0); ++pass) {
    std::size_t steps = 0;
    while (step() && ++steps < 20000) {
    }
    REQUIRE(steps < 20000);
    idle = true;
    for (Side* d : {&d1, &d2}) {
      const auto arrivals = d->arrivals;
      for (const auto& [id, arrival] : arrivals) {
        if (HandoffHarness::state(*d, id) == KvRequestState::kComplete) {
          HandoffHarness::consumeAndRelease(*d, id);
          idle = false;
        }
        d->arrivals.erase(id);
      }
    }
  }
  Outcome outcome;
  for (const Live& r : requests) {
    INFO("request " << r.id);
    const KvRequestStatus s = HandoffHarness::status(p, r.id);
    CHECK(isTerminal(s.state));
    if (s.state == KvRequestState::kReleased) CHECK(verified.contains(r.id));
    ++(s.state == KvRequestState::kReleased ? outcome.released : outcome.failed);
  }
  h.expectClean();
  return outcome;
}

}  // namespace

TEST_CASE("random schedules keep every invariant", "[handoff]") {
  Outcome total;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    INFO("seed " << seed);
    const Outcome outcome = runSchedule(seed);
    total.released += outcome.released;
    total.failed += outcome.failed;
  }
  // The schedules reach both ends of the life cycle often.
  CHECK(total.released > 200);
  CHECK(total.failed > 50);
}
