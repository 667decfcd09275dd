// An installed-package consumer in C++: two kvx agents in this process, the second loading
// the first's metadata, move 1 MiB with a prepared-list transfer; every byte is compared.
// Exits 0 and prints "kvx C++ consumer: OK" when all of it worked.
#include <kvx/agent.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

int fail(const char* what, const kvx::Status& status) {
  std::fprintf(stderr, "kvx C++ consumer: %s: %s\n", what, status.toString().c_str());
  return 1;
}

std::unique_ptr<kvx::Agent> makeAgent(const char* name) {
  kvx::AgentOptions options;
  options.name = name;
  options.listenAddress = "";
  kvx::selectDataPath(options, "shm");
  auto agent = kvx::Agent::create(options);
  if (!agent.isOk()) {
    fail("create", agent.status());
    return nullptr;
  }
  return std::move(agent).value();
}

}  // namespace

int main() {
  constexpr std::size_t kBytes = 1 << 20;
  std::vector<unsigned char> source(kBytes);
  std::vector<unsigned char> target(kBytes, 0);
  for (std::size_t i = 0; i < kBytes; ++i) source[i] = static_cast<unsigned char>(i * 7 + 3);

  auto owner = makeAgent("consumer-owner");
  auto mover = makeAgent("consumer-mover");
  if (!owner || !mover) return 1;
  auto targetRegion = owner->registerMemory({"target", target.data(), kBytes});
  if (!targetRegion.isOk()) return fail("register target", targetRegion.status());
  auto sourceRegion = mover->registerMemory({"source", source.data(), kBytes});
  if (!sourceRegion.isOk()) return fail("register source", sourceRegion.status());
  auto metadata = owner->exportMetadata();
  if (!metadata.isOk()) return fail("export metadata", metadata.status());
  auto peer = mover->loadPeerMetadata(*metadata);
  if (!peer.isOk()) return fail("load metadata", peer.status());

  const kvx::MemoryRange local{*sourceRegion, 0, kBytes};
  const kvx::MemoryRange remote{*targetRegion, 0, kBytes};
  auto localList = mover->prepareLocalList({&local, 1});
  if (!localList.isOk()) return fail("local list", localList.status());
  auto remoteList = mover->prepareRemoteList(*peer, {&remote, 1});
  if (!remoteList.isOk()) return fail("remote list", remoteList.status());
  const std::uint32_t index = 0;
  auto transfer = mover->makeTransfer(kvx::TransferOp::kWrite, *localList, {&index, 1}, *remoteList,
                                      {&index, 1});
  if (!transfer.isOk()) return fail("make transfer", transfer.status());
  if (kvx::Status posted = mover->post(*transfer); !posted.isOk()) return fail("post", posted);
  if (kvx::Status done = mover->wait(*transfer, kvx::deadlineIn(std::chrono::seconds(10)));
      !done.isOk()) {
    return fail("wait", done);
  }
  if (std::memcmp(source.data(), target.data(), kBytes) != 0) {
    std::fprintf(stderr, "kvx C++ consumer: the bytes differ\n");
    return 1;
  }
  std::printf("kvx C++ consumer: OK\n");
  return 0;
}
