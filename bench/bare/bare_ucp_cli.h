#pragma once

// The command line of `kvx-bare-ucp`, both ways: parseBareUcpCommandLine reads it (CLI11),
// toArguments writes the arguments that reproduce a BareUcpOptions (used to start the target
// process and by runBareUcp), so parse(toArguments(o)) == o for every valid o.
//
//   kvx-bare-ucp [--transport shm|tcp] [--net-devices lo] [--alloc registered|ucx]
//                [--op put|get] [--segment-bytes S] [--segments K] [--window W]
//                [--requests N | --seconds T] [--warmup N] [--pattern contiguous|random]
//                [--buffer-bytes B] [--target-spin-us U]
//                [--initiator-cpu C] [--target-cpu C] [--notify] [--fixed-overhead]
//                [--no-verify]
//                [--memcpy] [--memcpy-only] [--memcpy-seconds T] [--timeout-s T] [--seed N]
//                [--json FILE] [--quiet]
// Sizes take binary suffixes (4K, 32KiB, 16M). `--role target` is internal: the initiator
// starts its target process with it.

#include <string>
#include <vector>

#include "bench/bare/bare_ucp_options.h"
#include "kvx/result.h"

namespace kvx::bench {

enum class BareRole : std::uint8_t { kInitiator, kTarget };

struct BareUcpCommandLine {
  BareUcpOptions options;
  BareRole role = BareRole::kInitiator;
  std::string jsonFile;  // also write the JSON result here
  bool quiet = false;    // no summary line on stderr
  bool helpRequested = false;
  std::string helpText;  // when helpRequested
};

// `args` are argv[1..]. INVALID_ARGUMENT with CLI11's message, or validate()'s, on bad input.
Result<BareUcpCommandLine> parseBareUcpCommandLine(const std::vector<std::string>& args);

// Every option of `options`, explicitly (defaults included), in parseable form.
std::vector<std::string> toArguments(const BareUcpOptions& options);

}  // namespace kvx::bench
