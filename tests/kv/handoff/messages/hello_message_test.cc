// kvx-test-labels: unit
// The hello's optional fields (an older agent sends neither mode nor session) and the pool
// description it carries, checked field by field.
#include <catch2/catch.hpp>

#include "tests/kv/handoff/kv_message_samples.h"

using namespace kvx;
using namespace kvx::test::handoff;

TEST_CASE("a hello without a mode is from an agent that pushes; a bad mode is refused",
          "[handoff]") {
  json document = encoded(KvMessage(hello()));
  document.erase("mode");
  auto decoded = decode(document.dump());
  REQUIRE(decoded.isOk());
  CHECK(std::get<HelloMsg>(*decoded).mode == KvMode::kPush);
  document["mode"] = "sideways";
  checkRejected(document, "kv.mode: expected push or pull");
}

TEST_CASE("a hello without a session is from an older agent; session 0 is refused", "[handoff]") {
  HelloMsg unsaid = hello();
  unsaid.session = 0;
  json document = encoded(KvMessage(unsaid));
  CHECK_FALSE(document.contains("session"));  // 0 is not sent: it means "not said"
  auto decoded = decode(document.dump());
  REQUIRE(decoded.isOk());
  CHECK(std::get<HelloMsg>(*decoded).session == 0);
  document["session"] = 0;
  checkRejected(document, "kv.session: ");
}

TEST_CASE("a hello with an invalid pool description is refused", "[handoff]") {
  const json document = encoded(hello());
  auto withPool = [&](auto&& change) {
    json broken = document;
    change(broken["pool"]);
    return broken;
  };
  checkRejected(withPool([](json& p) { p["layout"] = "nchw"; }), "kv.pool.layout");
  checkRejected(withPool([](json& p) { p["layout"] = "nchw"; }), "unknown KV layout 'nchw'");
  checkRejected(withPool([](json& p) { p["layout"] = 1; }), "kv.pool.layout: expected string");
  checkRejected(withPool([](json& p) { p["blocks"] = 0; }),
                "kv.pool.blocks: expected unsigned integer in [1, ");
  checkRejected(withPool([](json& p) { p["blocks"] = -4; }), "kv.pool.blocks");
  checkRejected(withPool([](json& p) { p.erase("regions"); }), "kv.pool.regions: missing");
  checkRejected(withPool([](json& p) { p["regions"].erase(0); }),
                "kv.pool: pool description lists 31 tensor regions; layout nhd has 32");
  checkRejected(withPool([](json& p) { p["regions"].push_back(9); }),
                "kv.pool: pool description lists 33 tensor regions");
  checkRejected(withPool([](json& p) { p["layout"] = "cross-layer"; }),
                "lists 32 tensor regions; layout cross-layer has 1");
  checkRejected(withPool([](json& p) { p["regions"][3] = "r3"; }),
                "kv.pool.regions[3]: expected unsigned integer, got string");
  checkRejected(withPool([](json& p) { p["shape"]["layers"] = 0; }), "kv.pool.shape");
  checkRejected(withPool([](json& p) { p["shape"]["layers"] = 0; }), "'layers' must be");
  checkRejected(withPool([](json& p) { p["shape"]["headDim"] = -1; }), "'headDim' must be");
  checkRejected(withPool([](json& p) { p["shape"]["name"] = ""; }), "kv.pool.shape");
  checkRejected(withPool([](json& p) { p["shape"].erase("kvHeads"); }), "kvHeads");
  checkRejected(withPool([](json& p) { p["shape"]["mla"] = "yes"; }), "'mla'");
  checkRejected(withPool([](json& p) { p["shape"] = "llama3-8b"; }),
                "kv.pool.shape: expected object, got string");
  checkRejected(withPool([](json& p) { p.erase("shape"); }), "kv.pool.shape: missing");
  // 2^26 blocks of llama3-8b are 2^32 segments: more than a 32-bit list index addresses.
  checkRejected(withPool([](json& p) { p["blocks"] = 1ull << 26; }), "kv.pool: pool has");
  json notObject = document;
  notObject["pool"] = json::array();
  checkRejected(notObject, "kv.pool: expected object, got array");
}
