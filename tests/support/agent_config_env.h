#pragma once

// Helpers of the `kvx agent` configuration tests (tests/cli/agent_config*_test.cc): a clean
// KVX_* environment restored after the test, a temporary config file, and command lines.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/temp_file.h"

namespace kvx::test::agent_config {

// Every KVX_* variable the tests touch, cleared for the test and restored after it.
class CleanEnvironment {
 public:
  CleanEnvironment() {
    for (const char* name : kNames) {
      const char* value = std::getenv(name);
      saved_.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
      ::unsetenv(name);
    }
  }
  ~CleanEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  void set(const char* name, const char* value) { ::setenv(name, value, 1); }

 private:
  static constexpr const char* kNames[] = {"KVX_ROLE",
                                           "KVX_NAME",
                                           "KVX_LISTEN",
                                           "KVX_MODEL",
                                           "KVX_LAYOUT",
                                           "KVX_BLOCKS",
                                           "KVX_PEERS",
                                           "KVX_TRANSPORT",
                                           "KVX_MODE",
                                           "KVX_LEASE_MS",
                                           "KVX_TIMEOUT_MS",
                                           "KVX_PREFIX_CACHE_BLOCKS",
                                           "KVX_MAX_INFLIGHT_BYTES",
                                           "KVX_LOG_LEVEL",
                                           "KVX_CONFIG",
                                           "KVX_VERIFY",
                                           "KVX_TRACE",
                                           "KVX_SYNTHETIC",
                                           "KVX_REQUESTS",
                                           "KVX_REPORT",
                                           "KVX_TP_SIZE",
                                           "KVX_TP_RANK",
                                           "KVX_DECODE_TP",
                                           "KVX_BLOCK_ORDER",
                                           "KVX_NO_FILL",
                                           "KVX_REQUEST_PREFIX",
                                           "KVX_AUTH_TOKEN_FILE",
                                           "KVX_INSECURE",
                                           "KVX_PEER_TIMEOUT_MS",
                                           "KVX_HEARTBEAT_INTERVAL_MS",
                                           "KVX_MEMORY",
                                           "KVX_DEVICE",
                                           "KVX_GPU_PATH",
                                           "KVX_NET_DEVICES",
                                           "KVX_DATA_PROTECTION",
                                           "KVX_MAX_PUSH_BLOCKS_PER_PEER"};
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

using kvx::test::TempFile;  // tests/support/temp_file.h

inline const std::vector<std::string> kDecode{"--role", "decode", "--name", "d0", "--blocks", "64"};

inline std::vector<std::string> with(std::vector<std::string> base,
                                     const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

}  // namespace kvx::test::agent_config
