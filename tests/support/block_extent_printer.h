#pragma once

// How Catch prints a BlockExtent in failed assertions: "{first+count}".

#include <catch2/catch.hpp>
#include <string>

#include "kv/pool/block_extent.h"

namespace Catch {
template <>
struct StringMaker<kvx::kv::BlockExtent> {
  static std::string convert(const kvx::kv::BlockExtent& e) {
    return "{" + std::to_string(e.first) + "+" + std::to_string(e.count) + "}";
  }
};
}  // namespace Catch
