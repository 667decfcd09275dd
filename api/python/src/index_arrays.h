#pragma once

// Arrays from Python, read in place through the buffer protocol: index arrays of uint32 and
// range tables of uint64 (N rows of region, offset, length). numpy arrays, array.array('I')
// and memoryviews of them qualify; a Python list does not (it would cost an object per
// descriptor): it is refused with a TypeError that says what to pass.

#include <pybind11/pybind11.h>

#include <cstdint>
#include <span>
#include <vector>

#include "kvx/kv_types.h"
#include "kvx/memory.h"

namespace kvx::python {

// A view of a buffer held for as long as the view lives.
template <typename T>
struct ArrayView {
  pybind11::buffer_info info;
  std::span<const T> values;
};

// A C-contiguous, one-dimensional array of 32-bit unsigned integers.
ArrayView<std::uint32_t> indexArray(const pybind11::handle& object, const char* what);
// A C-contiguous, one-dimensional array of 64-bit unsigned integers (block ids, hashes).
ArrayView<std::uint64_t> valueArray(const pybind11::handle& object, const char* what);
// A C-contiguous table of 64-bit unsigned integers, N x 3 (or 3N flat): region, offset,
// length per row.
std::vector<MemoryRange> rangeTable(const pybind11::handle& object, const char* what);
// The same shape of table, rows of (block, layer, K=0/V=1): KvAgent segments.
std::vector<KvSegmentRef> segmentTable(const pybind11::handle& object, const char* what);
// A C-contiguous buffer of bytes (any item type) of exactly `bytes` bytes; `writable` for
// one kvx fills.
pybind11::buffer_info byteBuffer(const pybind11::handle& object, const char* what,
                                 std::size_t bytes, bool writable);

}  // namespace kvx::python
