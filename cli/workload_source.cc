#include "cli/workload_source.h"

#include <algorithm>

#include "workload/trace_generator.h"
#include "workload/trace_reader.h"

namespace kvx::cli {

Result<std::vector<workload::TraceRecord>> loadWorkload(const WorkloadConfig& config) {
  if (!config.trace.empty()) {
    auto records = workload::readTraceFile(config.trace);
    if (!records.isOk()) return records.status();
    if (config.requests != 0 && records->size() > config.requests) {
      records->resize(config.requests);
    }
    return records;
  }
  workload::TraceGeneratorOptions options;
  options.seed = config.seed;
  options.requests = config.requests == 0 ? 100 : config.requests;
  options.requestsPerSecond = config.rate;
  options.minInputTokens = config.minTokens;
  options.maxInputTokens = config.maxTokens;
  options.prefixShareProbability = config.prefixShare;
  // A shared prefix must fit in the longest prompt; the generator wants one 512-token chunk.
  options.maxSharedPrefixTokens = std::max<std::uint64_t>(
      workload::kPrefixChunkTokens,
      std::min<std::uint64_t>(options.maxSharedPrefixTokens, config.maxTokens / 2));
  if (config.maxTokens < workload::kPrefixChunkTokens) options.prefixShareProbability = 0;
  return workload::generateTrace(options);
}

}  // namespace kvx::cli
