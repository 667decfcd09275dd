#pragma once

// `kvx bench`: the KV migration benchmark. Runs the scenarios of WORKLOADS.md (or a free
// sweep) with real `kvx agent` processes, measures the bare UCP loop beside every case, and
// prints a table (and --json, --csv, --plot files); the `control` scenario (control-plane
// costs) runs after them. See bench/kv/scenarios.h, bench/kv/control/control_scenario.h and
// docs/benchmarks.md. The agents are this executable run as `kvx agent`; call from the main
// thread of the `kvx` process.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/kv/sweep.h"

namespace kvx::bench {

struct BenchOptions {
  std::vector<std::string> scenarios;
  std::string transport = "shm";  // shm | tcp | both
  bool quick = false;
  bool full = false;
  bool noVerify = false;
  bool noBare = false;
  std::string trace;
  double layerMs = 8;
  std::uint64_t poolBudgetMiB = 6144;
  std::string json;
  std::string csv;
  std::string plot;
  std::string bareBinary;
  std::string logLevel = "warn";
  std::uint64_t timeoutSeconds = 600;
  std::string workDir;  // empty: a temporary directory, removed afterwards
  // The agents' pools: host or cuda (device `device`; -1: not given, 0), and how their GPU
  // memory moves: auto | direct | staged (kvx agent --memory, --device, --gpu-path).
  std::string memory = "host";
  int device = -1;
  std::string gpuPath = "auto";
  bench::SweepOptions sweep;
  // Internal: run one step of the `control` scenario in this process and print its figures
  // as one JSON line (how `control` runs each step in a process of its own).
  std::string controlStep;
};

// Runs what `o` asks (with controlStep: that one step, its figures as a JSON line on stdout).
// `commandLine` is shown in the run's header; `stopRequested` is polled between cases and
// requests (a signal). 0 when every case ran, every request was released and every block
// verified; 1 otherwise; 2 for options no case can be made of.
int runBench(const BenchOptions& o, const std::string& commandLine,
             const std::function<bool()>& stopRequested);

}  // namespace kvx::bench
