#pragma once

// A `kvx` process a test starts (the binary: tests/support/kvx_binary.h).

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "process/child_process.h"
#include "tests/support/kvx_binary.h"

namespace kvx::test {

// `kvx ARGS...`, started; fails the test when it cannot be.
inline process::ChildProcess spawnKvx(const std::vector<std::string>& args) {
  auto child = process::ChildProcess::spawn(kvxBinary(), args);
  REQUIRE(child.isOk());
  return std::move(child).value();
}

}  // namespace kvx::test
