#include "daemon/workload_source.h"

#include <algorithm>

#include "workload/trace_generator.h"
#include "workload/trace_reader.h"

namespace kvx::daemon {

void clipPrompt(workload::TraceRecord& record, std::uint64_t tokens) {
  if (record.inputLength <= tokens) return;
  record.inputLength = tokens;
  const std::uint64_t chunks = workload::chunkCount(tokens);
  if (record.hashIds.size() > chunks) record.hashIds.resize(chunks);
}

Result<std::vector<workload::TraceRecord>> loadWorkload(const WorkloadConfig& config) {
  if (!config.trace.empty()) {
    auto records = workload::readTraceFile(config.trace);
    if (!records.isOk()) return records.status();
    if (config.requests != 0 && records->size() > config.requests) {
      records->resize(config.requests);
    }
    if (config.clipTokens > 0) {
      for (workload::TraceRecord& r : *records) clipPrompt(r, config.clipTokens);
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

}  // namespace kvx::daemon
