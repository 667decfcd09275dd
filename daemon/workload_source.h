#pragma once

// The requests a prefill agent replays: a recorded trace (--trace, optionally only its first
// --requests records, prompts cut to --clip-tokens) or a synthetic one (--synthetic and its
// options).

#include <vector>

#include "daemon/agent_config.h"
#include "workload/trace_record.h"

namespace kvx::daemon {

// Cuts a prompt longer than `tokens` to `tokens`, and its prefix hashes to the chunks left.
void clipPrompt(workload::TraceRecord& record, std::uint64_t tokens);

// NOT_FOUND / INVALID_ARGUMENT from the trace reader or the generator, naming the problem.
Result<std::vector<workload::TraceRecord>> loadWorkload(const WorkloadConfig& config);

}  // namespace kvx::daemon
