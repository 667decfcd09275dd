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

ArrayView<std::uint64_t> valueArray(const py::handle& object, const char* what) {
  py::buffer_info info = request(object, what, 8, "uint64");
  if (info.ndim != 1) {
    throw py::value_error(std::string(what) + " must be one-dimensional, not " +
                          std::to_string(info.ndim) + "-dimensional");
  }
  const auto* data = static_cast<const std::uint64_t*>(info.ptr);
  const auto count = static_cast<std::size_t>(info.shape[0]);
  return {std::move(info), std::span<const std::uint64_t>(data, count)};
}

namespace {

// The values of an N x 3 (or flat 3N) uint64 table, `columns` naming them for errors.
ArrayView<std::uint64_t> threeColumns(const py::handle& object, const char* what,
                                      const std::string& columns) {
  py::buffer_info info = request(object, what, 8, ("uint64 (" + columns + ") rows").c_str());
  std::size_t values = 1;
  for (py::ssize_t d = 0; d < info.ndim; ++d) values *= static_cast<std::size_t>(info.shape[d]);
  const bool rows = info.ndim == 2 && info.shape[1] == 3;
  const bool flat = info.ndim == 1 && values % 3 == 0;
  if (!rows && !flat) {
    throw py::value_error(std::string(what) + " must have 3 columns (" + columns +
                          "), or be flat with a multiple of 3 values");
  }
  const auto* data = static_cast<const std::uint64_t*>(info.ptr);
  return {std::move(info), std::span<const std::uint64_t>(data, values)};
}

}  // namespace

std::vector<MemoryRange> rangeTable(const py::handle& object, const char* what) {
  ArrayView<std::uint64_t> table = threeColumns(object, what, "region, offset, length");
  std::vector<MemoryRange> ranges;
  ranges.reserve(table.values.size() / 3);
  for (std::size_t i = 0; i + 2 < table.values.size(); i += 3) {
    ranges.push_back({RegionId(table.values[i]), table.values[i + 1], table.values[i + 2]});
  }
  return ranges;
}

std::vector<KvSegmentRef> segmentTable(const py::handle& object, const char* what) {
  ArrayView<std::uint64_t> table = threeColumns(object, what, "block, layer, kv");
  std::vector<KvSegmentRef> refs;
  refs.reserve(table.values.size() / 3);
  for (std::size_t i = 0; i + 2 < table.values.size(); i += 3) {
    if (table.values[i + 1] > UINT32_MAX || table.values[i + 2] > UINT32_MAX) {
      throw py::value_error(std::string(what) + ": row " + std::to_string(i / 3) +
                            " has a layer or kv beyond 32 bits");
    }
    refs.push_back({table.values[i], static_cast<std::uint32_t>(table.values[i + 1]),
                    static_cast<std::uint32_t>(table.values[i + 2])});
  }
  return refs;
}

py::buffer_info byteBuffer(const py::handle& object, const char* what, std::size_t bytes,
                           bool writable) {
  if (!PyObject_CheckBuffer(object.ptr())) {
    throw py::type_error(std::string(what) +
                         " must be a buffer (a numpy array, bytearray, "
                         "bytes or memoryview)");
  }
  py::buffer_info info = py::reinterpret_borrow<py::buffer>(object).request(writable);
  py::ssize_t stride = info.itemsize;
  for (py::ssize_t d = info.ndim - 1; d >= 0; --d) {
    if (info.shape[d] > 1 && info.strides[d] != stride) {
      throw py::value_error(std::string(what) + " must be C-contiguous");
    }
    stride *= info.shape[d];
  }
  const auto size = static_cast<std::size_t>(info.size * info.itemsize);
  if (size != bytes) {
    throw py::value_error(std::string(what) + " holds " + std::to_string(size) +
                          " bytes; it must hold exactly " + std::to_string(bytes));
  }
  return info;
}

}  // namespace kvx::python
