#pragma once

// TargetLink: the initiator's side of the conversation with the target process (the child
// process and the PipeChannel over its stdin/stdout), with the target's failures turned into
// statuses that say what happened: an error the target reported (kError), or its death (the
// pipe closed; the exit code is added).
//
// Owns the child process (killed on destruction if still running). One owner thread.

#include <cstdint>
#include <span>
#include <vector>

#include "bench/bare/pipe_channel.h"
#include "bench/bare/target_protocol.h"
#include "kvx/result.h"
#include "process/child_process.h"

namespace kvx::bench {

class TargetLink {
 public:
  explicit TargetLink(process::ChildProcess child);

  Status send(TargetMessage type, Deadline deadline, std::span<const std::uint8_t> payload = {});
  // The payload of the next message, which must be of `type`.
  Result<std::vector<std::uint8_t>> expect(TargetMessage type, Deadline deadline);
  // Non-blocking, for the measured loop: the target writes nothing then, so anything readable
  // on its pipe (an error message, or EOF because it died) is a failure.
  Status checkAlive();
  // Closes the target's stdin and waits for it to exit with code 0.
  Status finish(Deadline deadline);

 private:
  Status withExit(Status status);

  process::ChildProcess child_;
  PipeChannel channel_;
};

}  // namespace kvx::bench
