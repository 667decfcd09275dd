#include "examples/pair_transfer/initiator.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

#include "examples/pair_transfer/child_process.h"
#include "examples/pair_transfer/pattern.h"
#include "kvx/agent.h"

namespace pair_transfer {
namespace {

using namespace std::chrono_literals;

int fail(const std::string& what, const kvx::Status& status) {
  std::fprintf(stderr, "pair_transfer: %s: %s\n", what.c_str(), status.toString().c_str());
  return 1;
}

// Sends a command to the target and waits for its reply.
kvx::Result<std::string> ask(kvx::Agent& agent, const std::string& peer, const Command& command,
                             std::chrono::milliseconds timeout) {
  KVX_RETURN_IF_ERROR(agent.sendNotification(peer, formatCommand(command)));
  KVX_ASSIGN_OR_RETURN(kvx::Notification reply, agent.waitNotification(kvx::deadlineIn(timeout)));
  return parseReply(reply.payload).result;
}

std::string human(std::uint64_t bytes) {
  char text[32];
  if (bytes >= (1ull << 30)) {
    std::snprintf(text, sizeof(text), "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  } else if (bytes >= (1ull << 20)) {
    std::snprintf(text, sizeof(text), "%.2f MiB", static_cast<double>(bytes) / (1ull << 20));
  } else {
    std::snprintf(text, sizeof(text), "%.0f KiB", static_cast<double>(bytes) / 1024);
  }
  return text;
}

}  // namespace

int runInitiator(const Options& o) {
  const auto timeout = std::chrono::seconds(o.timeoutSeconds);
  std::optional<ChildProcess> child;
  std::string address = o.connect;
  if (address.empty()) {
    std::vector<std::string> args{"--role",      "target",
                                  "--transport", o.transport,
                                  "--bytes",     std::to_string(o.bytes),
                                  "--segment",   std::to_string(o.segment),
                                  "--timeout",   std::to_string(o.timeoutSeconds)};
    if (o.allocate) args.push_back("--allocate");
    auto spawned = ChildProcess::spawnSelf(args);
    if (!spawned.isOk()) return fail("starting the target", spawned.status());
    child.emplace(std::move(spawned).value());
    auto line = child->readLine(30s);
    if (!line.isOk() || line->rfind("LISTEN ", 0) != 0) {
      return fail(
          "reading the target's address",
          line.isOk() ? kvx::protocolError("unexpected line '" + *line + "'") : line.status());
    }
    address = line->substr(7);
  }

  kvx::AgentOptions agentOptions;
  agentOptions.name = "initiator-" + std::to_string(::getpid());
  agentOptions.listenAddress = "";
  agentOptions.ucxTransports = o.transport;
  auto created = kvx::Agent::create(agentOptions);
  if (!created.isOk()) return fail("creating the agent", created.status());
  kvx::Agent& agent = **created;
  auto peer = agent.connect(address);
  if (!peer.isOk()) return fail("connecting to " + address, peer.status());
  auto info = agent.peerInfo(*peer);
  if (!info.isOk() || info->regions.empty())
    return fail("reading the target's regions", info.status());
  const kvx::RegionInfo remote = info->regions.front();
  if (remote.length < o.bytes) {
    return fail("target buffer",
                kvx::invalidArgument("only " + std::to_string(remote.length) + " bytes"));
  }

  std::uint8_t* buffer = nullptr;
  std::unique_ptr<std::uint8_t[]> owned;
  kvx::RegionId local;
  if (o.allocate) {
    auto region = agent.allocateMemory({"buffer", o.bytes});
    if (!region.isOk()) return fail("allocating", region.status());
    buffer = static_cast<std::uint8_t*>(region->address);
    local = region->id;
  } else {
    owned.reset(new std::uint8_t[o.bytes]());
    buffer = owned.get();
    auto region = agent.registerMemory({"buffer", buffer, o.bytes});
    if (!region.isOk()) return fail("registering", region.status());
    local = *region;
  }

  const bool write = o.op == "write";
  if (write) {
    fillPattern({buffer, o.bytes}, 0, o.seed);
  } else {
    auto reply = ask(agent, *peer, Command{"fill", 0, o.bytes, o.seed}, timeout);
    if (!reply.isOk() || *reply != "ok") {
      return fail("target fill", reply.isOk() ? kvx::internalError(*reply) : reply.status());
    }
  }

  // Segment order: shuffled keeps every segment a separate operation (the per-descriptor
  // path); sequential lets adjacent segments coalesce.
  const std::uint64_t segments = o.bytes / o.segment;
  std::vector<std::uint64_t> order(segments);
  std::iota(order.begin(), order.end(), 0);
  if (o.order == "shuffled") std::shuffle(order.begin(), order.end(), std::mt19937_64(o.seed));

  // Descriptor preparation happens before the clock starts.
  const std::uint64_t perBatch = std::max<std::uint64_t>(1, o.batch / o.segment);
  std::vector<kvx::TransferId> transfers;
  std::uint64_t operations = 0;
  for (std::uint64_t first = 0; first < segments; first += perBatch) {
    kvx::TransferRequest request;
    request.peer = *peer;
    request.op = write ? kvx::TransferOp::kWrite : kvx::TransferOp::kRead;
    const std::uint64_t last = std::min(segments, first + perBatch);
    for (std::uint64_t i = first; i < last; ++i) {
      const std::uint64_t offset = order[i] * o.segment;
      request.segments.push_back({{local, offset, o.segment}, {remote.id, offset, o.segment}});
    }
    auto id = agent.createTransfer(request);
    if (!id.isOk()) return fail("creating a transfer", id.status());
    operations += agent.transferStats(*id)->operations;
    transfers.push_back(*id);
  }

  const auto start = std::chrono::steady_clock::now();
  const kvx::Deadline deadline = kvx::deadlineIn(timeout);
  std::deque<kvx::TransferId> inFlight;
  std::size_t next = 0;
  while (next < transfers.size() || !inFlight.empty()) {
    while (next < transfers.size() && inFlight.size() < o.inFlight) {
      kvx::Status posted = agent.post(transfers[next]);
      if (!posted.isOk()) return fail("posting", posted);
      inFlight.push_back(transfers[next++]);
    }
    kvx::Status done = agent.wait(inFlight.front(), deadline);
    if (!done.isOk()) return fail("transfer", done);
    inFlight.pop_front();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::string verdict;
  if (write) {
    auto reply = ask(agent, *peer, Command{"check", 0, o.bytes, o.seed}, timeout);
    if (!reply.isOk()) return fail("target check", reply.status());
    verdict = *reply;
  } else {
    verdict = checkPattern({buffer, o.bytes}, 0, o.seed);
    if (verdict.empty()) verdict = "ok";
  }
  const std::string path = agent.dataPathDescription(*peer).valueOr(std::string("unknown"));
  std::printf(
      "pair_transfer: %-5s %s in %s segments over %s [%s]: %.3f s, %.2f GB/s, "
      "%llu descriptors -> %llu operations, verify: %s\n",
      o.op.c_str(), human(o.bytes).c_str(), human(o.segment).c_str(), o.transport.c_str(),
      path.c_str(), seconds, static_cast<double>(o.bytes) / seconds / 1e9,
      static_cast<unsigned long long>(segments), static_cast<unsigned long long>(operations),
      verdict.c_str());
  std::fflush(stdout);

  agent.sendNotification(*peer, formatCommand(Command{"exit"})).ignore();
  if (child) {
    const int code = child->waitExit(10s);
    if (code != 0) std::fprintf(stderr, "pair_transfer: the target exited with %d\n", code);
  }
  return verdict == "ok" ? 0 : 1;
}

}  // namespace pair_transfer
