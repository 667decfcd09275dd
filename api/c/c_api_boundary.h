#pragma once

// What every function of the C API (kvx/kvx.h) shares: the calling thread's last error, the
// conversion of a Status to a kvx_status, the agent handle, and a guard that turns any
// exception into KVX_INTERNAL so that none crosses into C.

#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>

#include "kvx/agent.h"
#include "kvx/kvx.h"
#include "kvx/status.h"

struct kvx_agent {
  std::unique_ptr<kvx::Agent> agent;
};

namespace kvx::c_api {

// Records `status` as the calling thread's last error (unless OK) and returns its code.
kvx_status report(const Status& status);
// INVALID_ARGUMENT naming the NULL argument.
kvx_status nullArgument(std::string_view function, std::string_view argument);
// A copy of `text` for the caller to free with kvx_free (NULL when out of memory).
char* copyString(std::string_view text);
// A copy of `bytes` for the caller to free with kvx_free.
std::uint8_t* copyBytes(std::span<const std::uint8_t> bytes);

// The integer a C caller passed for an enum parameter, read without loading it as the C++
// enum (whose valid values C++ limits to the enumerators' range: any int may come from C).
template <typename Enum>
int rawValue(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(int));
  int raw = 0;
  std::memcpy(&raw, &value, sizeof raw);
  return raw;
}

// Runs `body` (returning a Status); running out of memory becomes RESOURCE_EXHAUSTED, any
// other exception INTERNAL, with its text.
template <typename Body>
kvx_status guarded(std::string_view function, Body&& body) noexcept {
  try {
    return report(body());
  } catch (const std::bad_alloc& e) {
    return report(resourceExhausted(std::string(function) + ": out of memory (" + e.what() + ")"));
  } catch (const std::exception& e) {
    return report(internalError(std::string(function) + ": " + e.what()));
  } catch (...) {
    return report(internalError(std::string(function) + ": an unknown exception"));
  }
}

}  // namespace kvx::c_api
