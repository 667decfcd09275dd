#pragma once

// ModelShape: the KV-cache geometry of a model, as the cache's byte layout needs it.
// Built-in shapes by name, or any shape from JSON:
//   {"name": "my-model", "layers": 32, "kvHeads": 8, "headDim": 128, "dtypeBytes": 2,
//    "tokensPerBlock": 16, "mla": false}
// MLA models (DeepSeek) keep one latent vector per token and layer: no separate V, and
// "kvHeads" is 1 with "headDim" the latent width.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kvx/result.h"

namespace kvx::kv {

struct ModelShape {
  std::string name;
  std::uint32_t layers = 0;
  std::uint32_t kvHeads = 0;  // per tensor-parallel rank as the pool holds them
  std::uint32_t headDim = 0;
  std::uint32_t dtypeBytes = 2;
  std::uint32_t tokensPerBlock = 16;
  bool mla = false;

  // 2 (K and V), or 1 for MLA.
  std::uint32_t kvCount() const { return mla ? 1 : 2; }
  // Bytes of one token's K (or V) for one layer: heads x dim x dtype.
  std::uint64_t tokenBytes() const { return std::uint64_t{kvHeads} * headDim * dtypeBytes; }
  // Bytes of KV per token over all layers (128 KiB for llama3-8b in bf16).
  std::uint64_t bytesPerToken() const { return tokenBytes() * kvCount() * layers; }
  // Bytes of one (layer, K or V, block) segment (32 KiB for llama3-8b).
  std::uint64_t segmentBytes() const { return tokenBytes() * tokensPerBlock; }
  // Blocks that hold `tokens` tokens (the last one may be partly filled).
  std::uint64_t blocksForTokens(std::uint64_t tokens) const {
    return (tokens + tokensPerBlock - 1) / tokensPerBlock;
  }
};

// Checks ranges (every field > 0, sizes that fit 64 bits); INVALID_ARGUMENT names the field.
Status validateShape(const ModelShape& shape);

// "llama3-8b", "qwen2.5-32b" (per TP2 rank), "llama3-70b" (per TP8 rank), "deepseek-v3".
// NOT_FOUND lists the known names.
Result<ModelShape> builtinShape(std::string_view name);
std::vector<std::string> builtinShapeNames();

// A shape from JSON text (see above); every field type- and range-checked.
Result<ModelShape> shapeFromJson(std::string_view text);
// The JSON text shapeFromJson reads back.
std::string shapeToJson(const ModelShape& shape);
// A built-in name, or else JSON text.
Result<ModelShape> shapeFromNameOrJson(std::string_view text);

}  // namespace kvx::kv
