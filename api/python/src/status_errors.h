#pragma once

// The Python exceptions of kvx: kvx.Error, and one subclass per StatusCode (kvx.NotFound,
// kvx.PeerFailed, ...), each carrying kvx's message. A failed Status becomes the exception of
// its code; nothing else crosses into Python.

#include <pybind11/pybind11.h>

#include "kvx/result.h"
#include "kvx/status.h"

namespace kvx::python {

// Creates the exception classes in `module` (once, at import).
void addErrors(pybind11::module_& module);

// Raises the exception of `status`'s code. REQUIRES: !status.isOk().
[[noreturn]] void raise(const Status& status);

inline void check(const Status& status) {
  if (!status.isOk()) raise(status);
}

template <typename T>
T take(Result<T> result) {
  if (!result.isOk()) raise(result.status());
  return std::move(result).value();
}

}  // namespace kvx::python
