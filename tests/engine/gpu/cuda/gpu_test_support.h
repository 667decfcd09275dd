#pragma once

// What the tests labelled `gpu` share: the reason they cannot run here (no CUDA build, no
// visible device), the skip that ctest reports as skipped, and byte patterns and comparisons
// that do not print megabytes when they fail.

#include <catch2/catch.hpp>
#include <cstddef>
#include <string>
#include <vector>

#include "engine/gpu/gpu_runtime.h"

namespace kvx::test::gpu {

// Why the GPU tests cannot run here, or "" when a device is visible.
inline std::string skipReason() {
  engine::gpu::GpuRuntime& runtime = engine::gpu::gpuRuntime();
  if (!runtime.compiledIn()) return "kvx was built without CUDA";
  Result<int> devices = runtime.deviceCount();
  if (!devices.isOk()) return "no CUDA device visible (" + devices.status().message() + ")";
  if (*devices == 0) return "no CUDA device visible";
  return "";
}

inline std::vector<std::byte> pattern(std::size_t length, unsigned seed) {
  std::vector<std::byte> bytes(length);
  for (std::size_t i = 0; i < length; ++i) bytes[i] = std::byte((i * 151 + seed) & 0xff);
  return bytes;
}

// "" when `got` equals `want`, else how many bytes differ and where the first one is.
inline std::string difference(const std::vector<std::byte>& got,
                              const std::vector<std::byte>& want) {
  if (got.size() != want.size()) {
    return "sizes differ: " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  }
  std::size_t first = got.size();
  std::size_t count = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (count++ == 0) first = i;
  }
  if (count == 0) return "";
  return std::to_string(count) + " of " + std::to_string(got.size()) +
         " bytes differ; the first at offset " + std::to_string(first) + ": got " +
         std::to_string(static_cast<int>(got[first])) + ", want " +
         std::to_string(static_cast<int>(want[first]));
}

}  // namespace kvx::test::gpu

// Ends the test case, reported as skipped, where no GPU can be used.
#define KVX_SKIP_WITHOUT_GPU()                                      \
  do {                                                              \
    const std::string kvxSkipReason = kvx::test::gpu::skipReason(); \
    if (!kvxSkipReason.empty()) {                                   \
      WARN("kvx-test-skipped: " << kvxSkipReason);                  \
      return;                                                       \
    }                                                               \
  } while (false)
