#include "bench/bare/target_link.h"

#include <poll.h>

#include <string>

namespace kvx::bench {

TargetLink::TargetLink(process::ChildProcess child)
    : child_(std::move(child)), channel_(child_.stdoutFd(), child_.stdinFd()) {}

Status TargetLink::send(TargetMessage type, Deadline deadline,
                        std::span<const std::uint8_t> payload) {
  return withExit(channel_.send(static_cast<std::uint32_t>(type), payload, deadline));
}

Result<std::vector<std::uint8_t>> TargetLink::expect(TargetMessage type, Deadline deadline) {
  Result<PipeMessage> message = channel_.receive(deadline);
  if (!message.isOk()) return withExit(message.status());
  if (message->type == static_cast<std::uint32_t>(TargetMessage::kError)) {
    return peerFailed("target process: " +
                      std::string(message->payload.begin(), message->payload.end()));
  }
  if (message->type != static_cast<std::uint32_t>(type)) {
    return protocolError("target process sent message type " + std::to_string(message->type) +
                         " where type " + std::to_string(static_cast<std::uint32_t>(type)) +
                         " was expected");
  }
  return std::move(message->payload);
}

Status TargetLink::checkAlive() {
  pollfd p{child_.stdoutFd(), POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return Status::ok();
  Status status = expect(TargetMessage::kReport, std::chrono::steady_clock::now()).status();
  if (status.isOk()) status = protocolError("a report before the stop");
  return status.withContext("the target process stopped serving during the loop");
}

Status TargetLink::finish(Deadline deadline) {
  child_.closeStdin();
  KVX_ASSIGN_OR_RETURN(const int code, child_.waitExit(deadline));
  if (code != 0) return peerFailed("target process exited with code " + std::to_string(code));
  return Status::ok();
}

// A dead pipe usually means a dead target: say how it ended.
Status TargetLink::withExit(Status status) {
  if (status.code() != StatusCode::kPeerFailed) return status;
  Result<int> code = child_.waitExit(std::chrono::steady_clock::now() + std::chrono::seconds(1));
  return status.withContext("target process (exit code " +
                            (code.isOk() ? std::to_string(*code) : std::string("unknown")) + ")");
}

}  // namespace kvx::bench
