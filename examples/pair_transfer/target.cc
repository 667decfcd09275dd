#include "examples/pair_transfer/target.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "examples/pair_transfer/pattern.h"
#include "kvx/agent.h"

namespace pair_transfer {
namespace {

// Runs one command against the buffer; the reply text ("ok" or what went wrong).
std::string execute(const Command& c, std::uint8_t* buffer, std::uint64_t size) {
  if (c.offset > size || c.length > size - c.offset) {
    return "error: range [" + std::to_string(c.offset) + "+" + std::to_string(c.length) +
           ") is outside the " + std::to_string(size) + "-byte buffer";
  }
  std::span<std::uint8_t> bytes(buffer + c.offset, c.length);
  if (c.verb == "fill") {
    fillPattern(bytes, c.offset, c.seed);
    return "ok";
  }
  const std::string problem = checkPattern(bytes, c.offset, c.seed);
  return problem.empty() ? "ok" : "mismatch: " + problem;
}

}  // namespace

int runTarget(const Options& o) {
  kvx::AgentOptions agentOptions;
  agentOptions.name = "target-" + std::to_string(::getpid());
  agentOptions.listenAddress = o.listen;
  agentOptions.ucxTransports = o.transport;
  auto agent = kvx::Agent::create(agentOptions);
  if (!agent.isOk()) {
    std::fprintf(stderr, "target: %s\n", agent.status().toString().c_str());
    return 1;
  }
  std::uint8_t* buffer = nullptr;
  std::unique_ptr<std::uint8_t[]> owned;
  if (o.allocate) {
    auto region = (*agent)->allocateMemory({"buffer", o.bytes});
    if (!region.isOk()) {
      std::fprintf(stderr, "target: %s\n", region.status().toString().c_str());
      return 1;
    }
    buffer = static_cast<std::uint8_t*>(region->address);
  } else {
    owned.reset(new std::uint8_t[o.bytes]());
    buffer = owned.get();
    auto region = (*agent)->registerMemory({"buffer", buffer, o.bytes});
    if (!region.isOk()) {
      std::fprintf(stderr, "target: %s\n", region.status().toString().c_str());
      return 1;
    }
  }
  std::printf("LISTEN %s\n", (*agent)->listenAddress().c_str());
  std::fflush(stdout);

  const kvx::Deadline end = kvx::deadlineIn(std::chrono::seconds(o.timeoutSeconds));
  bool hadPeer = false;
  while (kvx::Clock::now() < end) {
    auto n = (*agent)->waitNotification(kvx::deadlineIn(std::chrono::milliseconds(200)));
    if (!n.isOk()) {
      const bool hasPeer = !(*agent)->peers().empty();
      if (hadPeer && !hasPeer) {
        spdlog::info("target: the initiator left");
        return 0;
      }
      hadPeer = hadPeer || hasPeer;
      continue;
    }
    hadPeer = true;
    auto command = parseCommand(n->payload);
    std::string reply;
    if (!command) {
      reply = "error: unknown command '" + n->payload.substr(0, 64) + "'";
    } else if (command->verb == "exit") {
      return 0;
    } else {
      reply = execute(*command, buffer, o.bytes);
    }
    // Replies name the command they answer: notifications of different transfers are not
    // ordered with each other, so a sender with several in flight must match them up.
    kvx::Status sent = (*agent)->sendNotification(n->peer, reply + " | " + n->payload);
    if (!sent.isOk()) spdlog::warn("target: reply to '{}' failed: {}", n->peer, sent.toString());
  }
  spdlog::error("target: no exit command within {} s", o.timeoutSeconds);
  return 1;
}

}  // namespace pair_transfer
