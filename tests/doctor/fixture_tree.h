#pragma once

// Test helpers for kvx doctor: the shipped fixture roots (tests/fixtures/doctor/<case>/, made
// by tests/fixtures/doctor/generate.py) and small temporary trees a test writes itself.

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "doctor/system_facts.h"
#include "doctor/system_root.h"

namespace kvx::doctor::testing {

// tests/fixtures/doctor/<name>, found next to this header's source path.
inline std::filesystem::path fixturePath(std::string_view name) {
  return std::filesystem::path(__FILE__).parent_path().parent_path() / "fixtures" / "doctor" /
         std::string(name);
}

inline SystemRoot fixtureRoot(std::string_view name) {
  const auto path = fixturePath(name);
  REQUIRE(std::filesystem::is_directory(path));
  return SystemRoot(path);
}

// Every probe over a fixture, UCX facts from its kvx-doctor-ucx.json.
inline SystemFacts fixtureFacts(std::string_view name,
                                std::uint64_t poolBytes = std::uint64_t{2} << 30) {
  const SystemRoot root = fixtureRoot(name);
  auto ucx = makeUcxProbeFor(root);
  return gatherFacts(root, poolBytes, *ucx);
}

// A temporary directory tree, removed with the object.
class TempTree {
 public:
  TempTree() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kvx-doctor-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    root_ = pattern;
  }
  ~TempTree() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;

  const std::filesystem::path& path() const { return root_; }

  void write(std::string_view systemPath, std::string_view text) const {
    const auto file = root_ / std::filesystem::path(systemPath).relative_path();
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }

  // A symlink at `systemPath` whose target is `target`, written as given (relative or not).
  void link(std::string_view systemPath, std::string_view target) const {
    const auto file = root_ / std::filesystem::path(systemPath).relative_path();
    std::filesystem::create_directories(file.parent_path());
    std::filesystem::create_symlink(target, file);
  }

 private:
  std::filesystem::path root_;
};

}  // namespace kvx::doctor::testing
