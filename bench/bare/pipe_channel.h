#pragma once

// PipeChannel: typed, length-prefixed messages over a pair of pipe file descriptors, the
// bootstrap link between the bare reference's two processes (the initiator holds the child's
// stdin and stdout; the target holds its own). Frame: u32 type | u32 payload length |
// payload, in host byte order (both ends are the same binary on the same machine).
//
// Does not own the descriptors; sets both to non-blocking so that every call keeps its
// deadline. One owner thread.

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "bench/bare/deadline.h"
#include "kvx/result.h"

namespace kvx::bench {

struct PipeMessage {
  std::uint32_t type = 0;
  std::vector<std::uint8_t> payload;
};

class PipeChannel {
 public:
  static constexpr std::uint32_t kMaxPayload = 1u << 30;

  PipeChannel(int readFd, int writeFd);

  int readFd() const { return readFd_; }

  // TIMED_OUT when the pipe stays full past `deadline`; PEER_FAILED when the reader is gone.
  Status send(std::uint32_t type, std::span<const std::uint8_t> payload, Deadline deadline);
  // The next message. TIMED_OUT past `deadline`; PEER_FAILED when the writer closed its end.
  Result<PipeMessage> receive(Deadline deadline);
  // Non-blocking: a message if a whole one has arrived, nullopt otherwise; PEER_FAILED at EOF.
  Result<std::optional<PipeMessage>> tryReceive();

 private:
  // Reads what is available now; false at EOF.
  Result<bool> fill();
  std::optional<PipeMessage> takeBuffered();

  int readFd_;
  int writeFd_;
  std::vector<std::uint8_t> buffer_;
};

}  // namespace kvx::bench
