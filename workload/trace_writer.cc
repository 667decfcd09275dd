#include "workload/trace_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace kvx::workload {

std::string toJsonLine(const TraceRecord& record) {
  std::string line;
  line.reserve(80 + record.hashIds.size() * 8);
  line += "{\"timestamp\": " + std::to_string(record.timestampMs);
  line += ", \"input_length\": " + std::to_string(record.inputLength);
  line += ", \"output_length\": " + std::to_string(record.outputLength);
  line += ", \"hash_ids\": [";
  for (std::size_t i = 0; i < record.hashIds.size(); ++i) {
    if (i > 0) line += ", ";
    line += std::to_string(record.hashIds[i]);
  }
  line += "]}";
  return line;
}

Status writeTraceFile(const std::string& path, std::span<const TraceRecord> records) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return invalidArgument("cannot create trace '" + path + "': " + std::strerror(errno));
  }
  bool written = true;
  for (const TraceRecord& record : records) {
    const std::string line = toJsonLine(record) + "\n";
    if (std::fwrite(line.data(), 1, line.size(), file) != line.size()) {
      written = false;
      break;
    }
  }
  const int writeErrno = errno;
  // fclose flushes; a full disk often shows up only here.
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed) {
    return invalidArgument("cannot write trace '" + path +
                           "': " + std::strerror(written ? errno : writeErrno));
  }
  return Status::ok();
}

}  // namespace kvx::workload
