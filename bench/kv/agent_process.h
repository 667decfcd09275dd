#pragma once

// AgentProcess: one `kvx agent` process of a benchmark case: started with its arguments,
// its LISTENING address read, stopped with SIGTERM, and its --report JSON read afterwards.
// The child dies with the bench (it is killed when this object is destroyed).
//
// One owner thread.

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kvx/result.h"
#include "kvx/transfer.h"
#include "process/child_process.h"

namespace kvx::bench {

class AgentProcess {
 public:
  // Starts `binary agent ARGS... --report reportPath` and waits for its LISTENING line. An
  // agent that cannot start (its STATS line with an error) fails with its code and reason.
  static Result<AgentProcess> start(const std::string& binary, std::string name,
                                    std::vector<std::string> args, std::string reportPath,
                                    std::chrono::milliseconds timeout);

  const std::string& name() const { return name_; }
  const std::string& address() const { return address_; }

  // Waits until the process exits by itself (a prefill agent at the end of its replay), up
  // to the deadline; then SIGTERMs it and gives it 30 s more. Returns the exit code.
  int awaitExit(Clock::time_point deadline);
  // SIGTERM, then waits up to `timeout` (killing it after). Returns the exit code.
  int stop(std::chrono::milliseconds timeout);
  // The report the process wrote; PROTOCOL_ERROR when it is missing or not JSON.
  Result<nlohmann::json> report() const;

 private:
  AgentProcess(std::string name, kvx::process::ChildProcess child, std::string reportPath)
      : name_(std::move(name)), child_(std::move(child)), reportPath_(std::move(reportPath)) {}

  std::string name_;
  std::optional<kvx::process::ChildProcess> child_;
  std::string reportPath_;
  std::string address_;
};

}  // namespace kvx::bench
