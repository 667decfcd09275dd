#pragma once

// Where an object that speaks DLPack (__dlpack__ and __dlpack_device__: torch, numpy, cupy,
// jax, ...) keeps its bytes, read from the DLPack capsule it hands out (dlpack.h, Debian's
// libdlpack-dev). The capsule is read, not consumed: the memory stays the object's, which
// must outlive its registration.

#include <pybind11/pybind11.h>

namespace kvx::python {

// Adds _kvx.dlpack_memory(obj) -> (address, nbytes, kind, device): kind "host" (CPU or
// CUDA-pinned host memory) or "cuda"; ValueError for memory that is not contiguous, or of a
// device kvx cannot register.
void addDlpack(pybind11::module_& module);

}  // namespace kvx::python
