// kvx-test-labels: unit serial
// A layer-wise request whose move() call itself fails.
#include <catch2/catch.hpp>

#include "tests/kv/handoff/handoff_harness.h"

using namespace kvx;
using namespace kvx::test::handoff;

// A layer-wise request is placed with several layers ready and a move() call fails: the
// failure may finish and erase the request inside the loop that starts the layers' moves,
// which must then stop without touching it (run under AddressSanitizer to see a mistake).
TEST_CASE("a failed move() call on a layer ends the request cleanly", "[handoff]") {
  HandoffHarness h;
  Side& p = h.addPrefill("p", 32);
  h.addDecode("d", 32);
  h.connect("p", "d");
  h.net().failNextMoveCalls(1);
  KvRequestSpec spec = h.request(p, "a", 20);
  spec.mode = KvMode::kPush;
  spec.layerwise = true;
  REQUIRE(p.prefill->submit(spec).isOk());
  for (std::uint32_t l = 0; l < 4; ++l) REQUIRE(p.prefill->layerReady("a", l).isOk());
  REQUIRE(h.settle());  // the placement starts all four layers at once
  const KvRequestStatus sent = HandoffHarness::status(p, "a");
  CHECK(sent.state == KvRequestState::kFailed);
  CHECK(sent.status.code() == StatusCode::kTransportError);
  CHECK(h.net().moves().empty());
  h.expectClean();
}
