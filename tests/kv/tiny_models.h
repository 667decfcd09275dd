#pragma once

// The small model shapes the KV tests build their pools from (JSON, as KvPoolOptions::model
// takes it): big enough for several layers and heads, small enough to check every byte.

namespace kvx::test {

// Four layers of two KV heads of 16 elements, four tokens per block: the KV agent tests.
inline constexpr const char* kTinyShape =
    R"({"name":"tiny","layers":4,"kvHeads":2,"headDim":16,"dtypeBytes":2,"tokensPerBlock":4})";

// Three layers of two KV heads of 4 elements, four tokens per block: the pool tests.
inline constexpr const char* kTinyModel =
    R"({"name":"tiny","layers":3,"kvHeads":2,"headDim":4,"dtypeBytes":2,"tokensPerBlock":4})";

}  // namespace kvx::test
