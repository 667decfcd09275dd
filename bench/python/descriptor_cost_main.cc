// kvx-descriptor-cost: what making and posting one transfer of N descriptors costs a caller of
// the C++ API (libkvx.so), the reference for the same measurement from Python
// (descriptor_cost.py, which runs this binary in the same run). Two agents in this process
// over shared memory; lists of N blocks prepared once; each round makes a transfer from a
// shuffled index array and posts it (timed), then waits for it and releases it (not timed).
// Prints one line: "kvx-descriptor-cost: N descriptors, make median M us, make+post median U
// us (R rounds)".
//   kvx-descriptor-cost [descriptors=16384] [rounds=40] [block=1024]
#include <kvx/agent.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

namespace {

template <typename T>
T need(kvx::Result<T> result, const char* what) {
  if (!result.isOk()) {
    std::fprintf(stderr, "kvx-descriptor-cost: %s: %s\n", what, result.status().toString().c_str());
    std::exit(1);
  }
  return std::move(result).value();
}

void need(const kvx::Status& status, const char* what) {
  if (!status.isOk()) {
    std::fprintf(stderr, "kvx-descriptor-cost: %s: %s\n", what, status.toString().c_str());
    std::exit(1);
  }
}

std::unique_ptr<kvx::Agent> agent(const char* name) {
  kvx::AgentOptions options;
  options.name = name;
  options.listenAddress = "";
  kvx::selectDataPath(options, "shm");
  return need(kvx::Agent::create(options), "create");
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint32_t descriptors = argc > 1 ? std::atoi(argv[1]) : 16384;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 40;
  const std::uint64_t block = argc > 3 ? std::atoi(argv[3]) : 1024;
  const std::uint64_t bytes = descriptors * block;
  std::vector<unsigned char> source(bytes, 1);
  std::vector<unsigned char> target(bytes, 0);
  auto owner = agent("cost-owner");
  auto mover = agent("cost-mover");
  const kvx::RegionId remoteRegion =
      need(owner->registerMemory({"target", target.data(), bytes}), "register");
  const kvx::RegionId localRegion =
      need(mover->registerMemory({"source", source.data(), bytes}), "register");
  const std::string peer =
      need(mover->loadPeerMetadata(need(owner->exportMetadata(), "export")), "load");
  std::vector<kvx::MemoryRange> local;
  std::vector<kvx::MemoryRange> remote;
  for (std::uint32_t i = 0; i < descriptors; ++i) {
    local.push_back({localRegion, i * block, block});
    remote.push_back({remoteRegion, i * block, block});
  }
  const kvx::ListId localList = need(mover->prepareLocalList(local), "local list");
  const kvx::ListId remoteList = need(mover->prepareRemoteList(peer, remote), "remote list");
  std::vector<std::uint32_t> from(descriptors);
  std::iota(from.begin(), from.end(), 0);
  std::vector<std::uint32_t> to = from;
  std::shuffle(to.begin(), to.end(), std::mt19937(7));

  std::vector<double> micros;
  std::vector<double> makeMicros;
  for (int r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const kvx::TransferId id =
        need(mover->makeTransfer(kvx::TransferOp::kWrite, localList, from, remoteList, to), "make");
    const auto made = std::chrono::steady_clock::now();
    need(mover->post(id), "post");
    const auto posted = std::chrono::steady_clock::now();
    need(mover->wait(id, kvx::deadlineIn(std::chrono::seconds(30))), "wait");
    need(mover->release(id), "release");
    micros.push_back(std::chrono::duration<double, std::micro>(posted - start).count());
    makeMicros.push_back(std::chrono::duration<double, std::micro>(made - start).count());
  }
  std::sort(micros.begin(), micros.end());
  std::sort(makeMicros.begin(), makeMicros.end());
  std::printf(
      "kvx-descriptor-cost: %u descriptors, make median %.1f us, make+post median %.1f us "
      "(%d rounds)\n",
      descriptors, makeMicros[makeMicros.size() / 2], micros[micros.size() / 2], rounds);
  return 0;
}
