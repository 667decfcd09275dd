#pragma once

// A pair_transfer target process for multi-process tests: a real agent in another process
// that serves a buffer and answers fill/check commands (examples/pair_transfer/pattern.h).

#include <cstdint>
#include <optional>
#include <string>

#include "process/child_process.h"

namespace kvx::test {

struct TargetProcess {
  kvx::process::ChildProcess process;
  std::string address;  // control address "127.0.0.1:port"
};

// Starts `pair_transfer --role target` (found through $KVX_PAIR_TRANSFER) with a buffer of
// `bytes` over `transport` ("tcp" or "shm"). Fails the running test on error.
TargetProcess startTarget(const std::string& transport, std::uint64_t bytes, bool allocate = false);

// The pair_transfer binary, from $KVX_PAIR_TRANSFER.
std::string pairTransferBinary();

}  // namespace kvx::test
