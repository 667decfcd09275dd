#pragma once

// Whether this test (and so the kvx binaries it starts: they come from the same build) runs
// under a sanitizer. AddressSanitizer and ThreadSanitizer slow the agents 3-15x on 2 cores,
// so the longest multi-process workloads run smaller there: they take the same code paths,
// which is what the sanitizers check, and the plain build runs them at full size.
namespace kvx::test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif
#else
inline constexpr bool kThreadSanitizer = false;
#endif

inline constexpr bool kSanitizerBuild = kAddressSanitizer || kThreadSanitizer;

}  // namespace kvx::test
