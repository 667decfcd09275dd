// Fuzz target for the trace reader (workload/trace_reader.h). A trace file is user input
// rather than peer input, but a malformed one must still give an error, never a crash.
// Properties:
//   - a refusal is INVALID_ARGUMENT with a message that starts with the source name;
//   - accepted records have non-decreasing timestamps, input_length > 0 and no more hash ids
//     than chunks;
//   - round trip: the records written back as JSONL (trace_writer.h) read back equal.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "workload/trace_reader.h"
#include "workload/trace_writer.h"

namespace {

using kvx::StatusCode;
using namespace kvx::workload;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto records = parseTrace(kvx::fuzz::asText(data, size), "fuzz.jsonl");
  if (!records.isOk()) {
    KVX_FUZZ_CHECK_REFUSAL(records.status(), StatusCode::kInvalidArgument);
    KVX_FUZZ_CHECK(records.status().message().starts_with("fuzz.jsonl:"));
    return 0;
  }
  std::string text;
  for (std::size_t i = 0; i < records->size(); ++i) {
    const TraceRecord& record = (*records)[i];
    KVX_FUZZ_CHECK(record.inputLength > 0);
    KVX_FUZZ_CHECK(record.hashIds.size() <= chunkCount(record.inputLength));
    KVX_FUZZ_CHECK(i == 0 || (*records)[i - 1].timestampMs <= record.timestampMs);
    text += toJsonLine(record);
    text += '\n';
  }
  const auto again = parseTrace(text, "rewritten.jsonl");
  if (!again.isOk()) kvx::fuzz::fail(__FILE__, __LINE__, again.status().toString());
  KVX_FUZZ_CHECK(*again == *records);
  return 0;
}
