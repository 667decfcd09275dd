#pragma once

// The `kvx` binary the multiprocess tests run: $KVX_CLI (CTest sets it), or cli/kvx in this
// test's build tree. Fails the test when neither exists.

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace kvx::test {

inline std::string kvxBinary() {
  if (const char* path = std::getenv("KVX_CLI"); path != nullptr && *path != '\0') return path;
  const auto guess =
      std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path() / "cli" / "kvx";
  if (!std::filesystem::exists(guess)) {
    FAIL("no kvx binary at " << guess.string() << ": build the kvx_cli target or set KVX_CLI");
  }
  return guess.string();
}

}  // namespace kvx::test
