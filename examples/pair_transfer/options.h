#pragma once

// pair_transfer's command line.

#include <cstdint>
#include <string>

namespace pair_transfer {

struct Options {
  std::string role = "initiator";  // initiator | target
  std::string op = "write";        // write | read
  std::string transport = "shm";   // shm | tcp (UCX transports)
  std::uint64_t bytes = 1ull << 30;
  std::uint64_t segment = 32 * 1024;
  std::uint64_t batch = 64ull << 20;   // bytes per transfer request
  unsigned inFlight = 4;               // transfer requests in flight
  std::string order = "shuffled";      // shuffled (no coalescing) | sequential
  bool allocate = false;               // agent-allocated memory (one-sided on shm)
  std::string connect;                 // initiator: a running target's control address
  std::string listen = "127.0.0.1:0";  // target: where to listen
  unsigned timeoutSeconds = 300;       // the whole run's deadline
  std::uint64_t seed = 42;
};

// Parses argv; exits with a usage message on error or --help.
Options parseOptions(int argc, char** argv);

}  // namespace pair_transfer
