// Fuzz target for model shapes from JSON (kv/pool/model_shape.h): a peer's KV hello carries
// one, and a user's configuration may give one. Properties:
//   - a refusal is INVALID_ARGUMENT (NOT_FOUND for an unknown built-in name) with a message;
//   - an accepted shape passes validateShape, and its sizes fit 64 bits as validateShape
//     promises: one block of every layer, K and V (the largest size derived from a shape
//     alone; the per-token and per-segment sizes are smaller);
//   - round trip: shapeToJson of the shape reads back as the same shape and the same text.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "fuzz/fuzz_check.h"
#include "kv/pool/model_shape.h"

namespace {

using kvx::StatusCode;
namespace kv = kvx::kv;

bool fits64(const kv::ModelShape& s) {
  std::uint64_t bytes = s.kvHeads;
  for (std::uint64_t factor :
       {std::uint64_t{s.headDim}, std::uint64_t{s.dtypeBytes}, std::uint64_t{s.tokensPerBlock},
        std::uint64_t{s.kvCount()}, std::uint64_t{s.layers}}) {
    if (bytes > std::numeric_limits<std::uint64_t>::max() / factor) return false;
    bytes *= factor;
  }
  return true;
}

bool sameShape(const kv::ModelShape& a, const kv::ModelShape& b) {
  return a.name == b.name && a.layers == b.layers && a.kvHeads == b.kvHeads &&
         a.headDim == b.headDim && a.dtypeBytes == b.dtypeBytes &&
         a.tokensPerBlock == b.tokensPerBlock && a.mla == b.mla;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = kvx::fuzz::asText(data, size);
  const auto any = kv::shapeFromNameOrJson(text);
  if (!any.isOk() && any.status().code() != StatusCode::kNotFound) {
    KVX_FUZZ_CHECK_REFUSAL(any.status(), StatusCode::kInvalidArgument);
  }

  const auto shape = kv::shapeFromJson(text);
  if (!shape.isOk()) {
    KVX_FUZZ_CHECK_REFUSAL(shape.status(), StatusCode::kInvalidArgument);
    return 0;
  }
  KVX_FUZZ_CHECK(kv::validateShape(*shape).isOk());
  KVX_FUZZ_CHECK(fits64(*shape));

  const std::string json = kv::shapeToJson(*shape);
  const auto again = kv::shapeFromJson(json);
  if (!again.isOk()) kvx::fuzz::fail(__FILE__, __LINE__, again.status().toString());
  KVX_FUZZ_CHECK(sameShape(*again, *shape));
  KVX_FUZZ_CHECK(kv::shapeToJson(*again) == json);
  return 0;
}
