#pragma once

#include <cstdlib>
#include <string_view>

// Whether this test (and so the kvx binaries it starts: they come from the same build) runs
// under a sanitizer. AddressSanitizer and ThreadSanitizer slow the agents 3-15x on 2 cores,
// so the longest multi-process workloads run smaller there: they take the same code paths,
// which is what the sanitizers check, and the plain build runs them at full size.

// gcc says so with __SANITIZE_*__, clang with __has_feature.
#if defined(__has_feature)
#define KVX_TEST_HAS_FEATURE(feature) __has_feature(feature)
#else
#define KVX_TEST_HAS_FEATURE(feature) 0
#endif

namespace kvx::test {

#if defined(__SANITIZE_ADDRESS__) || KVX_TEST_HAS_FEATURE(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif

#if defined(__SANITIZE_THREAD__) || KVX_TEST_HAS_FEATURE(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif

inline constexpr bool kSanitizerBuild = kAddressSanitizer || kThreadSanitizer;

// Whether the longest multi-process workloads run at their small size: under a sanitizer,
// and where KVX_TEST_SMALL_WORKLOADS=1 asks for it (scripts/ucx122.sh: the UCX 1.22 leg
// checks that the same code paths work on another UCX, which their size does not change).
inline bool smallWorkloads() {
  static const bool small = kSanitizerBuild || [] {
    const char* value = std::getenv("KVX_TEST_SMALL_WORKLOADS");
    return value != nullptr && std::string_view(value) == "1";
  }();
  return small;
}

}  // namespace kvx::test
