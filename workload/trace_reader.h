#pragma once

// Reading JSONL traces (format in workload/trace_record.h). Each non-blank line is one object:
//   timestamp      ms, an integer >= 0 (a float with an integral value is accepted)
//   input_length   an integer > 0
//   output_length  an integer >= 0
//   hash_ids       an array of unsigned integers, at most chunkCount(input_length) of them
// Unknown fields are ignored; blank lines are skipped (line numbers still count them); a
// trailing '\r' is dropped. Timestamps must be non-decreasing.
// Pure functions; safe to call from any thread.

#include <string>
#include <string_view>
#include <vector>

#include "kvx/result.h"
#include "workload/trace_record.h"

namespace kvx::workload {

// Parses a whole trace held in memory. `sourceName` (a path, or "<stdin>") starts every error.
// Errors: INVALID_ARGUMENT "SOURCE:LINE: what is wrong (field, value)" for the first bad line.
Result<std::vector<TraceRecord>> parseTrace(std::string_view text, std::string_view sourceName);

// A trace of a million requests is about 100 MiB of JSONL.
inline constexpr std::uint64_t kMaxTraceFileBytes = 1ull << 30;

// Reads and parses the file at `path`. NOT_FOUND with the path and the OS error when it
// cannot be opened or read, INVALID_ARGUMENT when it is not a regular file (a FIFO is refused,
// not waited on) or holds more than kMaxTraceFileBytes; otherwise as parseTrace.
Result<std::vector<TraceRecord>> readTraceFile(const std::string& path);

}  // namespace kvx::workload
