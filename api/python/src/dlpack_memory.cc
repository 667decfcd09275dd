#include "api/python/src/dlpack_memory.h"

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>

namespace kvx::python {
namespace {

namespace py = pybind11;

py::tuple dlpackMemory(const py::object& object) {
  if (!py::hasattr(object, "__dlpack__")) {
    throw py::type_error("the object has no __dlpack__");
  }
  py::object capsule = object.attr("__dlpack__")();
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (managed == nullptr) throw py::error_already_set();
  const DLTensor& t = managed->dl_tensor;
  std::uint64_t elements = 1;
  for (int d = 0; d < t.ndim; ++d) elements *= static_cast<std::uint64_t>(t.shape[d]);
  if (t.strides != nullptr) {
    std::int64_t expected = 1;
    for (int d = t.ndim - 1; d >= 0; --d) {
      if (t.shape[d] > 1 && t.strides[d] != expected) {
        throw py::value_error(
            "the tensor is not contiguous (strides do not match its shape): "
            "register a contiguous tensor, e.g. .contiguous()");
      }
      expected *= t.shape[d];
    }
  }
  const std::uint64_t bits = static_cast<std::uint64_t>(t.dtype.bits) * t.dtype.lanes;
  if (bits % 8 != 0) throw py::value_error("the tensor's element size is not whole bytes");
  const std::uint64_t nbytes = elements * bits / 8;
  const auto address = reinterpret_cast<std::uintptr_t>(t.data) + t.byte_offset;
  switch (t.device.device_type) {
    case kDLCPU:
    case kDLCUDAHost: return py::make_tuple(address, nbytes, "host", -1);
    case kDLCUDA: return py::make_tuple(address, nbytes, "cuda", t.device.device_id);
    default:
      throw py::value_error(
          "kvx registers host and CUDA memory; this tensor is on DLPack device "
          "type " +
          std::to_string(static_cast<int>(t.device.device_type)));
  }
}

}  // namespace

void addDlpack(py::module_& module) { module.def("dlpack_memory", &dlpackMemory, py::arg("obj")); }

}  // namespace kvx::python
