#pragma once

// Writing JSONL traces in the format workload/trace_reader.h reads (and Mooncake's traces use):
//   {"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2]}
// What is written reads back equal. Pure functions; safe to call from any thread.

#include <span>
#include <string>

#include "kvx/status.h"
#include "workload/trace_record.h"

namespace kvx::workload {

// One record as one JSON object, without the trailing newline.
std::string toJsonLine(const TraceRecord& record);

// Writes one line per record to `path`, replacing the file. Errors: INVALID_ARGUMENT when the
// file cannot be created, written or closed, with the path and the OS error.
Status writeTraceFile(const std::string& path, std::span<const TraceRecord> records);

}  // namespace kvx::workload
