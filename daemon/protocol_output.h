#pragma once

// The `kvx agent` stdout protocol (LISTENING <address>, STATS {json}) on a descriptor of its
// own. claim() moves what stdout was to a private descriptor and points descriptor 1 at
// stderr, so that whatever a library prints to stdout (UCX writes its log there, before and
// after LISTENING) lands in the log instead of in the lines a parent parses.
//
// Thread safety: claim() once, before other threads start; writeLine() from any thread (one
// write per line).

#include <string>

namespace kvx::daemon {

class ProtocolOutput {
 public:
  // Idempotent. Without claim(), writeLine() writes to stdout.
  static void claim();
  // Writes `line` and a newline to the protocol stream.
  static void writeLine(const std::string& line);
};

}  // namespace kvx::daemon
