#include "api/python/src/index_arrays.h"

#include <string>

#include "api/python/src/status_errors.h"

namespace kvx::python {
namespace {

namespace py = pybind11;

bool isUnsignedFormat(const std::string& format) {
  if (format.empty()) return false;
  const char kind = format.back();
  return kind == 'B' || kind == 'H' || kind == 'I' || kind == 'L' || kind == 'Q';
}

py::buffer_info request(const py::handle& object, const char* what, std::size_t itemsize,
                        const char* expected) {
  if (!PyObject_CheckBuffer(object.ptr())) {
    throw py::type_error(std::string(what) + " must be an array of " + expected +
                         " (a numpy array or array.array), not " +
                         std::string(py::str(py::type::handle_of(object).attr("__name__"))));
  }
  py::buffer_info info = py::reinterpret_borrow<py::buffer>(object).request();
  if (!isUnsignedFormat(info.format) || static_cast<std::size_t>(info.itemsize) != itemsize) {
    throw py::type_error(std::string(what) + " must hold " + expected + ", not items of format '" +
                         info.format + "' (" + std::to_string(info.itemsize) + " bytes)");
  }
  // C-contiguous: the last dimension's stride is the item size and each outer one spans the
  // inner ones.
  py::ssize_t expectedStride = info.itemsize;
  for (py::ssize_t d = info.ndim - 1; d >= 0; --d) {
    if (info.shape[d] > 1 && info.strides[d] != expectedStride) {
      throw py::value_error(std::string(what) + " must be C-contiguous (pass numpy's " +
                            "ascontiguousarray of it)");
    }
    expectedStride *= info.shape[d];
  }
  return info;
}

}  // namespace

ArrayView<std::uint32_t> indexArray(const py::handle& object, const char* what) {
  py::buffer_info info = request(object, what, 4, "uint32");
  if (info.ndim != 1) {
    throw py::value_error(std::string(what) + " must be one-dimensional, not " +
                          std::to_string(info.ndim) + "-dimensional");
  }
  const auto* data = static_cast<const std::uint32_t*>(info.ptr);
  const auto count = static_cast<std::size_t>(info.shape[0]);
  return {std::move(info), std::span<const std::uint32_t>(data, count)};
}

std::vector<MemoryRange> rangeTable(const py::handle& object, const char* what) {
  py::buffer_info info = request(object, what, 8, "uint64 (region, offset, length) rows");
  std::size_t values = 1;
  for (py::ssize_t d = 0; d < info.ndim; ++d) values *= static_cast<std::size_t>(info.shape[d]);
  const bool rows = info.ndim == 2 && info.shape[1] == 3;
  const bool flat = info.ndim == 1 && values % 3 == 0;
  if (!rows && !flat) {
    throw py::value_error(std::string(what) +
                          " must have 3 columns (region, offset, length), or be flat with a "
                          "multiple of 3 values");
  }
  const auto* data = static_cast<const std::uint64_t*>(info.ptr);
  std::vector<MemoryRange> ranges;
  ranges.reserve(values / 3);
  for (std::size_t i = 0; i + 2 < values; i += 3) {
    ranges.push_back({RegionId(data[i]), data[i + 1], data[i + 2]});
  }
  return ranges;
}

}  // namespace kvx::python
