#pragma once

// `kvx demo`: a disaggregated prefill/decode setup on this machine in one command. It starts
// two decode agents (`kvx agent --role decode --verify`) and one prefill agent that replays a
// workload into them, waits for the replay (with a deadline), stops the decode agents with
// SIGTERM, and prints the KV migration latency report (cli/demo_report.h).

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "cli/signals.h"

namespace kvx::cli {

struct DemoOptions {
  std::uint64_t requests = 200;
  std::uint64_t seed = 1;
  std::string model = "llama3-8b";
  std::string layout = "nhd";
  std::string transport = "shm";
  std::string mode = "mixed";
  std::string layerwise = "mixed";
  std::string trace;
  double timeScale = 1;
  double rate = 100;
  std::uint64_t minTokens = 128;
  std::uint64_t maxTokens = 4096;
  double prefixShare = 0.5;
  double layerMs = 0;
  std::uint64_t maxOutstanding = 32;
  std::uint64_t decodeBlocks = 1024;
  std::uint64_t prefillBlocks = 1024;
  std::uint64_t prefixCacheBlocks = 256;
  std::uint64_t timeoutSeconds = 300;
  std::string logLevel = "warn";
  std::string json;
};

void addDemoOptions(CLI::App& app, DemoOptions& options);

// Returns the exit code: 0 only when every request succeeded, no block was corrupt and every
// pool got all its blocks back.
int runDemoCommand(const DemoOptions& options, StopSignal& stop);

}  // namespace kvx::cli
