#pragma once

// Property checks for the fuzz targets. A violated check prints what failed and aborts, which
// libFuzzer (and the corpus replay) reports as a crash together with the input that caused it.
// Test-only; never linked into the libraries.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kvx/status.h"

namespace kvx::fuzz {

[[noreturn]] inline void fail(const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "%s:%d: fuzz property violated: %s\n", file, line, what.c_str());
  std::abort();
}

// A decoder's refusal must be a clear Status: the documented code and a non-empty message.
inline void checkRefusal(const Status& status, StatusCode expected, const char* file, int line) {
  if (status.code() == expected && !status.message().empty()) return;
  fail(file, line,
       "expected a " + std::string(toString(expected)) + " refusal, got " + status.toString());
}

inline std::string_view asText(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace kvx::fuzz

#define KVX_FUZZ_CHECK(condition)                                        \
  do {                                                                   \
    if (!(condition)) ::kvx::fuzz::fail(__FILE__, __LINE__, #condition); \
  } while (false)

// `status` must be a refusal with code `expected` (a StatusCode) and a message.
#define KVX_FUZZ_CHECK_REFUSAL(status, expected) \
  ::kvx::fuzz::checkRefusal((status), (expected), __FILE__, __LINE__)
