#pragma once

// SystemRoot: the directory through which every probe reads the machine. On a real machine it
// is "/"; tests point it at a fixture tree (tests/fixtures/doctor/<case>/) that holds the same
// sysfs and procfs files, so each probe sees a DGX-like node or a broken one.
//
// Paths passed in are system paths ("/sys/bus/pci/devices"); they are looked up under the
// root. Symlinks are followed inside the tree, so fixtures use relative links like sysfs.
// Immutable after construction; any thread may use it.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kvx/result.h"

namespace kvx::doctor {

// Every /proc and /sys file a probe reads is a few KiB at most.
inline constexpr std::uint64_t kMaxSystemFileBytes = 1u << 20;

class SystemRoot {
 public:
  // `root` need not exist: every read then reports the file as missing.
  explicit SystemRoot(std::filesystem::path root);

  const std::filesystem::path& path() const { return root_; }

  // True for "/": probes may then also ask the running process and libraries (getrlimit,
  // libibverbs), which a fixture tree cannot stand in for.
  bool isRealRoot() const { return real_; }

  // The host path of a system path: "/proc/cmdline" -> "<root>/proc/cmdline".
  std::filesystem::path hostPath(std::string_view systemPath) const;

  bool exists(std::string_view systemPath) const;

  // The whole file. NOT_FOUND when it is missing or unreadable, not a regular file, or larger
  // than kMaxSystemFileBytes, naming the host path.
  Result<std::string> readText(std::string_view systemPath) const;

  // The first line, without surrounding white space.
  Result<std::string> readLine(std::string_view systemPath) const;

  // Names in a directory, sorted; empty when it is missing.
  std::vector<std::string> list(std::string_view systemPath) const;

  // Follows every symlink and returns the result as a system path
  // ("/sys/bus/pci/devices/0000:18:00.0" -> "/sys/devices/pci0000:15/.../0000:18:00.0").
  // NOT_FOUND when it does not exist or leads out of the root.
  Result<std::string> resolve(std::string_view systemPath) const;

 private:
  std::filesystem::path root_;
  bool real_;
};

}  // namespace kvx::doctor
