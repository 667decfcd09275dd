#include "bench/kv/control/descriptor_measure.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <random>

#include "bench/kv/control/control_agents.h"
#include "bench/kv/control/control_clock.h"
#include "bench/kv/control/control_output.h"
#include "bench/kv/control/memory_room.h"
#include "bench/kv/control/sample_stats.h"
#include "kvx/agent.h"

namespace kvx::bench {
namespace {

constexpr const char* kDescriptorGroup = "descriptors";
constexpr double kTargetNs = 100;

struct DescriptorPair {
  std::unique_ptr<Agent> initiator;
  std::unique_ptr<Agent> target;
  std::string peer;  // the target's name as the initiator knows it
};

Result<DescriptorPair> connectDescriptorPair(const std::string& transport,
                                             std::uint32_t descriptors) {
  AgentOptions initiatorOptions = controlAgentOptions("control-desc-initiator", transport);
  initiatorOptions.maxOpsInFlight = descriptors;
  DescriptorPair pair;
  KVX_ASSIGN_OR_RETURN(pair.initiator, Agent::create(initiatorOptions));
  KVX_ASSIGN_OR_RETURN(pair.target,
                       Agent::create(controlAgentOptions("control-desc-target", transport)));
  KVX_ASSIGN_OR_RETURN(pair.peer, pair.initiator->connect(pair.target->listenAddress()));
  return pair;
}

std::vector<MemoryRange> rangesOf(RegionId region, std::uint32_t count, std::uint64_t bytes) {
  std::vector<MemoryRange> ranges(count);
  for (std::uint32_t i = 0; i < count; ++i) ranges[i] = MemoryRange{region, i * bytes, bytes};
  return ranges;
}

// Per-entry thread CPU of preparing (and, not timed, releasing) a list, median of `repeats`.
Result<double> prepareNsPerEntry(Agent& agent, const std::string& peer,
                                 const std::vector<MemoryRange>& ranges, std::uint32_t repeats) {
  std::vector<double> samples;
  for (std::uint32_t i = 0; i < repeats; ++i) {
    const std::uint64_t before = threadCpuNs();
    auto list =
        peer.empty() ? agent.prepareLocalList(ranges) : agent.prepareRemoteList(peer, ranges);
    const std::uint64_t spent = threadCpuNs() - before;
    if (!list.isOk()) return list.status();
    KVX_RETURN_IF_ERROR(agent.releaseList(*list));
    samples.push_back(static_cast<double>(spent) / static_cast<double>(ranges.size()));
  }
  return summarize(samples).p50;
}

// Regions stay registered until the agents go. Deregistering the target's region and
// allocating the next one made the initiator post with the old region's key (PeerLink
// caches keys by RemoteRegion address, which the new region can reuse): the put was refused
// as outside the old, smaller region.

struct PostCost {
  double makeNs = 0;  // per descriptor, medians
  double postNs = 0;
  double totalNs = 0;
  std::uint64_t operations = 0;
  double transferMs = 0;  // post until done, median (not part of the CPU figure)
};

Result<PostCost> postCost(DescriptorPair& pair, std::uint32_t descriptors, std::uint64_t bytes,
                          std::uint32_t repeats) {
  Agent& a = *pair.initiator;
  KVX_ASSIGN_OR_RETURN(AllocatedRegion local,
                       a.allocateMemory({.name = "control.desc.local." + std::to_string(bytes),
                                         .length = descriptors * bytes}));
  KVX_ASSIGN_OR_RETURN(
      AllocatedRegion remote,
      pair.target->allocateMemory(
          {.name = "control.desc.remote." + std::to_string(bytes), .length = descriptors * bytes}));
  KVX_RETURN_IF_ERROR(
      awaitPeerRegion(a, pair.peer, remote.id, deadlineIn(std::chrono::seconds(5))));
  KVX_ASSIGN_OR_RETURN(ListId localList,
                       a.prepareLocalList(rangesOf(local.id, descriptors, bytes)));
  KVX_ASSIGN_OR_RETURN(ListId remoteList,
                       a.prepareRemoteList(pair.peer, rangesOf(remote.id, descriptors, bytes)));
  std::vector<std::uint32_t> localIndices(descriptors), remoteIndices(descriptors);
  std::mt19937_64 random(bytes);
  std::vector<double> make, post, total, elapsed;
  PostCost cost;
  for (std::uint32_t r = 0; r < repeats; ++r) {
    std::iota(localIndices.begin(), localIndices.end(), 0u);
    std::iota(remoteIndices.begin(), remoteIndices.end(), 0u);
    std::shuffle(localIndices.begin(), localIndices.end(), random);
    std::shuffle(remoteIndices.begin(), remoteIndices.end(), random);
    const std::uint64_t before = threadCpuNs();
    auto transfer =
        a.makeTransfer(TransferOp::kWrite, localList, localIndices, remoteList, remoteIndices);
    const std::uint64_t made = threadCpuNs();
    if (!transfer.isOk()) return transfer.status();
    const auto started = Clock::now();
    const Status posted = a.post(*transfer);
    const std::uint64_t after = threadCpuNs();
    KVX_RETURN_IF_ERROR(posted);
    KVX_RETURN_IF_ERROR(a.wait(*transfer, deadlineIn(std::chrono::seconds(60))));
    elapsed.push_back(msSince(started));
    const TransferStatus finished = a.poll(*transfer);
    if (finished.state != TransferState::kDone) return finished.status;
    KVX_ASSIGN_OR_RETURN(TransferStats stats, a.transferStats(*transfer));
    cost.operations = stats.operations;
    KVX_RETURN_IF_ERROR(a.release(*transfer));
    const double n = descriptors;
    make.push_back(static_cast<double>(made - before) / n);
    post.push_back(static_cast<double>(after - made) / n);
    total.push_back(static_cast<double>(after - before) / n);
  }
  KVX_RETURN_IF_ERROR(a.releaseList(localList));
  KVX_RETURN_IF_ERROR(a.releaseList(remoteList));
  cost.makeNs = summarize(make).p50;
  cost.postNs = summarize(post).p50;
  cost.totalNs = summarize(total).p50;
  cost.transferMs = summarize(elapsed).p50;
  return cost;
}

}  // namespace

std::vector<ControlFigure> measureDescriptors(const std::string& transport,
                                              std::uint32_t descriptors,
                                              const std::vector<std::uint64_t>& segmentBytes,
                                              std::uint32_t repeats) {
  std::vector<ControlFigure> out;
  const std::string prepLocal = fmt::format("prepareLocalList, {} entries, CPU", descriptors);
  const std::string prepRemote = fmt::format("prepareRemoteList, {} entries, CPU", descriptors);
  auto pair = connectDescriptorPair(transport, descriptors);
  if (!pair.isOk())
    return {failedFigure(kDescriptorGroup, prepLocal, transport, pair.status().toString())};
  Agent& a = *pair->initiator;
  {
    constexpr std::uint64_t kBytes = 64;
    auto local = a.allocateMemory({.name = "control.prep.local", .length = descriptors * kBytes});
    auto remote = pair->target->allocateMemory(
        {.name = "control.prep.remote", .length = descriptors * kBytes});
    if (!local.isOk() || !remote.isOk()) {
      const Status why = local.isOk() ? remote.status() : local.status();
      return {failedFigure(kDescriptorGroup, prepLocal, transport, why.toString())};
    }
    if (Status known =
            awaitPeerRegion(a, pair->peer, remote->id, deadlineIn(std::chrono::seconds(5)));
        !known.isOk()) {
      return {failedFigure(kDescriptorGroup, prepRemote, transport, known.toString())};
    }
    const auto localRanges = rangesOf(local->id, descriptors, kBytes);
    const auto remoteRanges = rangesOf(remote->id, descriptors, kBytes);
    // The first remote list readies the peer's region; that is the handshake's cost.
    (void)prepareNsPerEntry(a, pair->peer, remoteRanges, 1);
    auto localNs = prepareNsPerEntry(a, "", localRanges, repeats);
    auto remoteNs = prepareNsPerEntry(a, pair->peer, remoteRanges, repeats);
    out.push_back(localNs.isOk() ? measuredFigure(kDescriptorGroup, prepLocal, transport, *localNs,
                                                  "ns/desc", repeats, "median")
                                 : failedFigure(kDescriptorGroup, prepLocal, transport,
                                                localNs.status().toString()));
    out.push_back(
        remoteNs.isOk()
            ? measuredFigure(kDescriptorGroup, prepRemote, transport, *remoteNs, "ns/desc", repeats,
                             "median; peer readied")
            : failedFigure(kDescriptorGroup, prepRemote, transport, remoteNs.status().toString()));
  }
  for (std::uint64_t bytes : segmentBytes) {
    const std::string name =
        fmt::format("makeTransfer + post, {} x {} random, CPU", descriptors, bytesLabel(bytes));
    if (Status room = checkMemoryRoom(2 * descriptors * bytes); !room.isOk()) {
      out.push_back(unmeasuredFigure(kDescriptorGroup, name, transport, room.message()));
      continue;
    }
    auto cost = postCost(*pair, descriptors, bytes, repeats);
    if (!cost.isOk()) {
      out.push_back(failedFigure(kDescriptorGroup, name, transport, cost.status().toString()));
      continue;
    }
    ControlFigure figure = measuredFigure(
        kDescriptorGroup, name, transport, cost->totalNs, "ns/desc", repeats,
        fmt::format("makeTransfer {:.0f} + post {:.0f} ns/desc; {} ops; done in {:.1f} ms",
                    cost->makeNs, cost->postNs, cost->operations, cost->transferMs));
    if (cost->operations != descriptors) {
      figure.detail += fmt::format(" (expected {} uncoalesced ops)", descriptors);
    }
    figure.target = "<= 100 ns/desc";
    figure.met = cost->totalNs <= kTargetNs;
    out.push_back(std::move(figure));
  }
  return out;
}

}  // namespace kvx::bench
