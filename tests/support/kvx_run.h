#pragma once

// runKvx: runs `kvx ARGS` (kvxBinary()) to the end, collecting its stdout line by line until
// it closes or `timeout` passes; returns the exit code (waited for up to 30 s more) and the
// output. The child inherits this process's environment.

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/kvx_child.h"

namespace kvx::test {

inline std::pair<int, std::string> runKvx(const std::vector<std::string>& args,
                                          std::chrono::seconds timeout) {
  kvx::process::ChildProcess child = spawnKvx(args);
  std::string output;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto line = child.readLine(std::chrono::milliseconds(500));
    if (line.isOk()) {
      output += *line + "\n";
    } else if (line.status().code() != StatusCode::kTimedOut) {
      break;
    }
  }
  return {child.waitExit(std::chrono::seconds(30)), output};
}

}  // namespace kvx::test
