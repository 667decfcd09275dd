// Fuzz target for latency histograms read from JSON (workload/latency_stats.h), the form in
// which processes ship their histograms to one reporter. Properties:
//   - a refusal is INVALID_ARGUMENT with a message; nothing throws out;
//   - an accepted histogram can be summarised (no undefined behaviour on extreme counts);
//   - round trip: toJson of the histogram reads back as a histogram with the same JSON.

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "workload/latency_stats.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using kvx::workload::LatencyHistogram;
  const auto histogram = LatencyHistogram::fromJson(kvx::fuzz::asText(data, size));
  if (!histogram.isOk()) {
    KVX_FUZZ_CHECK_REFUSAL(histogram.status(), kvx::StatusCode::kInvalidArgument);
    return 0;
  }
  const kvx::workload::LatencySummary summary = histogram->summary();
  KVX_FUZZ_CHECK(summary.count == histogram->count());

  const std::string json = histogram->toJson();
  const auto again = LatencyHistogram::fromJson(json);
  if (!again.isOk()) kvx::fuzz::fail(__FILE__, __LINE__, again.status().toString());
  KVX_FUZZ_CHECK(again->toJson() == json);
  return 0;
}
