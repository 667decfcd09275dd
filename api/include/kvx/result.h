#pragma once

// Result<T>: a value or the Status that explains why there is none.

#include <cassert>
#include <utility>
#include <variant>

#include "kvx/status.h"

// Declarations here are libkvx.so's exports (api/shared_library/).
#pragma GCC visibility push(default)
namespace kvx {

template <typename T>
class [[nodiscard]] Result {
 public:
  // REQUIRES: `status` is not OK (an OK Result must carry a value).
  Result(Status status) : state_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(state_).isOk()) {
      state_ =
          Status(StatusCode::kInternal, "Result constructed from an OK status without a value");
    }
  }
  Result(T value) : state_(std::move(value)) {}  // NOLINT(google-explicit-constructor)

  bool isOk() const { return std::holds_alternative<T>(state_); }

  // The error, or OK when a value is present.
  Status status() const& { return isOk() ? Status::ok() : std::get<Status>(state_); }
  Status status() && { return isOk() ? Status::ok() : std::move(std::get<Status>(state_)); }

  // REQUIRES: isOk().
  T& value() & {
    assert(isOk());
    return std::get<T>(state_);
  }
  const T& value() const& {
    assert(isOk());
    return std::get<T>(state_);
  }
  T&& value() && {
    assert(isOk());
    return std::move(std::get<T>(state_));
  }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  template <typename U>
  T valueOr(U&& fallback) const& {
    return isOk() ? std::get<T>(state_) : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::variant<T, Status> state_;
};

}  // namespace kvx
#pragma GCC visibility pop
