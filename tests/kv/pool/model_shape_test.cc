// kvx-test-labels: unit serial
#include "kv/pool/model_shape.h"

#include <catch2/catch.hpp>

using namespace kvx;
using namespace kvx::kv;

TEST_CASE("built-in shapes have the sizes of WORKLOADS.md", "[kv]") {
  // bytes per token (per rank) and one (layer, K or V, block) segment
  auto llama8b = builtinShape("llama3-8b").value();
  CHECK(llama8b.bytesPerToken() == 128 * 1024);
  CHECK(llama8b.segmentBytes() == 32 * 1024);
  auto qwen = builtinShape("qwen2.5-32b").value();
  CHECK(qwen.bytesPerToken() == 128 * 1024);  // 256 KiB over two ranks
  CHECK(qwen.segmentBytes() == 16 * 1024);
  auto llama70b = builtinShape("llama3-70b").value();
  CHECK(llama70b.bytesPerToken() == 40 * 1024);  // 320 KiB over eight ranks
  CHECK(llama70b.segmentBytes() == 4 * 1024);
  auto deepseek = builtinShape("deepseek-v3").value();
  CHECK(deepseek.kvCount() == 1);
  CHECK(deepseek.bytesPerToken() == 61 * 576 * 2);  // 68.6 KiB
  CHECK(deepseek.segmentBytes() == 72 * 1024);
}

TEST_CASE("an unknown shape name lists the known ones", "[kv]") {
  auto unknown = builtinShape("gpt-5");
  CHECK(unknown.status().code() == StatusCode::kNotFound);
  CHECK_THAT(unknown.status().message(), Catch::Contains("llama3-8b"));
}

TEST_CASE("custom shapes from JSON are checked field by field", "[kv]") {
  auto custom = shapeFromJson(
      R"({"name": "tiny", "layers": 2, "kvHeads": 4, "headDim": 64, "tokensPerBlock": 8})");
  REQUIRE(custom.isOk());
  CHECK(custom->dtypeBytes == 2);
  CHECK(custom->segmentBytes() == 8 * 4 * 64 * 2);
  CHECK(shapeFromJson(R"({"name": "m", "layers": 1, "kvHeads": 1, "headDim": 8, "mla": true})")
            ->kvCount() == 1);

  const char* bad[] = {
      "not json",
      "[1, 2]",
      R"({"layers": 2, "kvHeads": 4, "headDim": 64})",
      R"({"name": "", "layers": 2, "kvHeads": 4, "headDim": 64})",
      R"({"name": "x", "kvHeads": 4, "headDim": 64})",
      R"({"name": "x", "layers": "2", "kvHeads": 4, "headDim": 64})",
      R"({"name": "x", "layers": 0, "kvHeads": 4, "headDim": 64})",
      R"({"name": "x", "layers": -1, "kvHeads": 4, "headDim": 64})",
      R"({"name": "x", "layers": 2, "kvHeads": 4, "headDim": 64, "mla": 1})",
      R"({"name": "x", "layers": 2, "kvHeads": 4, "headDim": 99999999999})",
  };
  for (const char* text : bad) {
    INFO(text);
    CHECK(shapeFromJson(text).status().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("a shape whose sizes overflow 64 bits is refused", "[kv]") {
  // Every field is in range, but one block of all layers is 10^30 bytes: segmentBytes() and
  // bytesPerToken() would wrap around.
  auto huge = shapeFromJson(R"({"name":"h","layers":1000000,"kvHeads":1000000,"headDim":1000000,)"
                            R"("dtypeBytes":1000000,"tokensPerBlock":1000000})");
  CHECK(huge.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(huge.status().message(), Catch::Contains("does not fit in 64 bits"));

  ModelShape wide{"wide", 1, 65536, 65536, 65536, 65536, true};  // 2^64 bytes exactly
  CHECK(validateShape(wide).code() == StatusCode::kInvalidArgument);
  wide.tokensPerBlock = 32768;  // 2^63
  CHECK(validateShape(wide).isOk());
  CHECK(wide.segmentBytes() == std::uint64_t{1} << 63);
}

TEST_CASE("a deeply nested field is refused, not dumped into the message", "[kv]") {
  // 200,000 levels: dump() recurses once per level and would overflow the stack.
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  auto shape = shapeFromJson(R"({"name": "x", "layers": )" + deep + "}");
  CHECK(shape.status().code() == StatusCode::kInvalidArgument);
  CHECK(shape.status().message() ==
        "model shape: 'layers' must be an integer in 1..1000000, got array");
}
