// kvx-test-labels: unit serial
#include "kv/handoff/kv_agent_info.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "kv/pool/model_shape.h"

using namespace kvx;
using namespace kvx::kv::handoff;
using nlohmann::json;
namespace kv = kvx::kv;

namespace {

KvAgentInfo sample() {
  KvAgentInfo info;
  info.role = KvRole::kDecode;
  info.mode = KvMode::kPull;
  info.shape = kv::shapeFromNameOrJson("llama3-8b").value();
  info.layout = kv::KvLayout::kHND;
  info.blocks = 1024;
  for (std::uint32_t t = 0; t < info.shape.layers; ++t) {
    info.regionNames.push_back("kv.t" + std::to_string(t));
  }
  return info;
}

void checkRefused(json kv, const std::string& expected) {
  const auto decoded = decodeKvAgentInfo(json{{"kv", std::move(kv)}}.dump());
  REQUIRE_FALSE(decoded.isOk());
  CHECK(decoded.status().code() == StatusCode::kProtocolError);
  CHECK_THAT(decoded.status().message(), Catch::Contains(expected));
}

}  // namespace

TEST_CASE("a KV agent's description round trips through its text") {
  const KvAgentInfo info = sample();
  const auto decoded = decodeKvAgentInfo(encodeKvAgentInfo(info));
  REQUIRE(decoded.isOk());
  CHECK(decoded->role == info.role);
  CHECK(decoded->mode == info.mode);
  CHECK(decoded->shape.layers == info.shape.layers);
  CHECK(decoded->shape.kvHeads == info.shape.kvHeads);
  CHECK(decoded->layout == info.layout);
  CHECK(decoded->blocks == info.blocks);
  CHECK(decoded->regionNames == info.regionNames);
  CHECK_FALSE(decoded->process.known());  // not given
}

TEST_CASE("a KV agent's description carries its process where it names one") {
  KvAgentInfo info = sample();
  info.process = ProcessIdentity{4242, "boot-id/pid:4026531836"};
  const auto decoded = decodeKvAgentInfo(encodeKvAgentInfo(info));
  REQUIRE(decoded.isOk());
  CHECK(decoded->process.pid == 4242);
  CHECK(decoded->process.host == "boot-id/pid:4026531836");
}

TEST_CASE("an agent that describes no KV pool is not a KV agent") {
  CHECK(decodeKvAgentInfo("").status().code() == StatusCode::kNotFound);
  CHECK(decodeKvAgentInfo(R"({"other": 1})").status().code() == StatusCode::kNotFound);
  CHECK(decodeKvAgentInfo("not json").status().code() == StatusCode::kProtocolError);
  CHECK(decodeKvAgentInfo("[1]").status().code() == StatusCode::kProtocolError);
}

TEST_CASE("every field of a KV agent's description is checked, naming it") {
  const json good = json::parse(encodeKvAgentInfo(sample()))["kv"];
  json wrong = good;
  wrong["version"] = 2;
  checkRefused(wrong, "a KV agent of another protocol version");
  wrong = good;
  wrong["role"] = "router";
  checkRefused(wrong, "role: expected prefill or decode");
  wrong = good;
  wrong["mode"] = "both";
  checkRefused(wrong, "mode: expected push or pull");
  wrong = good;
  wrong["layout"] = "diagonal";
  checkRefused(wrong, "layout");
  wrong = good;
  wrong["blocks"] = 0;
  checkRefused(wrong, "blocks: expected unsigned integer in [1,");
  wrong = good;
  wrong["regions"][2] = 7;
  checkRefused(wrong, "regions[2]: expected a region name");
  wrong = good;
  wrong["shape"]["layers"] = "many";
  checkRefused(wrong, "shape");
  wrong = good;
  wrong["process"] = {{"pid", 0}, {"host", "h"}};
  checkRefused(wrong, "process.pid: expected unsigned integer in [1,");
  wrong["process"] = {{"pid", 7}, {"host", std::string(300, 'h')}};
  checkRefused(wrong, "process.host");
  wrong["process"] = 5;
  checkRefused(wrong, "process");
  // Fields of later versions are ignored.
  wrong = good;
  wrong["later"] = true;
  CHECK(decodeKvAgentInfo(json{{"kv", wrong}}.dump()).isOk());
}

TEST_CASE("a peer's pool resolves its region names among the regions it exposes") {
  KvAgentInfo info = sample();
  PeerInfo peer;
  peer.name = "decode-0";
  for (std::uint32_t t = 0; t < info.shape.layers; ++t) {
    RegionInfo region;
    region.id = RegionId(100 + t);
    region.name = "kv.t" + std::to_string(t);
    peer.regions.push_back(region);
  }
  auto pool = resolvePool(info, peer);
  REQUIRE(pool.isOk());
  REQUIRE(pool->tensorRegions.size() == info.shape.layers);
  CHECK(pool->tensorRegions[3] == RegionId(103));
  CHECK(pool->blocks == 1024);

  peer.regions.pop_back();
  auto missing = resolvePool(info, peer);
  CHECK(missing.status().code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(missing.status().message(),
             Catch::Contains("'decode-0' does not expose the region 'kv.t31'"));

  info.regionNames.pop_back();  // one region short of the layout's tensors
  auto short_ = resolvePool(info, peer);
  CHECK(short_.status().code() == StatusCode::kProtocolError);
}
