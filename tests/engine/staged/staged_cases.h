#pragma once

// The staged GPU path end to end, over the transport of stagedConfig(): GPU memory (fake:
// host memory declared CUDA) on the initiator moves through host staging buffers, byte for
// byte, alone or mixed with direct operations; cancel, deadlines and copy failures end the
// transfer with one outcome and no late bytes; remote GPU memory is refused when the
// transfer is made. Include once per test file. Tags: [staged].

#include <thread>

#include "tests/engine/staged/staged_pair.h"

namespace kvx::test::staged {

TEST_CASE("staged: WRITE from GPU memory lands byte for byte in the peer's host memory",
          "[staged]") {
  StagedPair p;
  // Unaligned pieces, one spanning many chunks, several sharing one chunk.
  const std::vector<TransferSegment> segments = {
      StagedPair::segment(p.regionDeviceA, 0, p.regionHostB, 1000, 300000),
      StagedPair::segment(p.regionDeviceA, 500000, p.regionHostB, 400000, 7),
      StagedPair::segment(p.regionDeviceA, 600000, p.regionHostB, 500000, 65536 * 3 + 5),
      StagedPair::segment(p.regionDeviceA, 900000, p.regionHostB, 900000, 4096)};
  std::vector<std::uint8_t> expected = p.hostB;
  applyWrite(p, segments, expected);

  auto id = p.moveToEnd(p.request(TransferOp::kWrite, segments));
  p.syncB();
  CHECK(firstDifference(p.hostB, expected) == "");

  auto stats = p.a->stats(*id);
  REQUIRE(stats.isOk());
  CHECK(stats->descriptors == 4);
  CHECK(stats->stagedOperations == stats->operations);
  CHECK(stats->stagedBytes == 300000 + 7 + 65536 * 3 + 5 + 4096);
  CHECK(stats->bytes == stats->stagedBytes);
  CHECK(p.copiesA().bytesCopied() >= stats->stagedBytes);
}

TEST_CASE("staged: READ from the peer's host memory lands byte for byte in GPU memory",
          "[staged]") {
  StagedPair p;
  std::vector<std::uint8_t> expected(p.deviceA.begin(), p.deviceA.end());
  std::memcpy(expected.data() + 4096, p.hostB.data() + 600000, 65536 * 3 + 5);
  std::memcpy(expected.data() + 800000, p.hostB.data() + 3, 100);

  auto id = p.a->createTransfer(
      p.request(TransferOp::kRead,
                {StagedPair::segment(p.regionDeviceA, 4096, p.regionHostB, 600000, 65536 * 3 + 5),
                 StagedPair::segment(p.regionDeviceA, 800000, p.regionHostB, 3, 100)}));
  REQUIRE(id.isOk());
  REQUIRE(p.a->post(*id).isOk());
  REQUIRE(p.a->wait(*id, deadlineIn(10s)).isOk());
  CHECK(firstDifference(p.deviceA, expected) == "");
  CHECK(p.a->stats(*id)->stagedBytes == 65536 * 3 + 5 + 100);
}

TEST_CASE("staged: a mixed transfer completes as one and notifies after all its data", "[staged]") {
  StagedPair p;
  for (std::uint64_t round = 0; round < 20; ++round) {
    const std::uint64_t base = round * 40000;
    fill(p.deviceA.subspan(base, 40000), 100 + round);
    fill(std::span<std::uint8_t>(p.hostA).subspan(base, 40000), 200 + round);
    const std::vector<TransferSegment> segments = {
        StagedPair::segment(p.regionHostA, base, p.regionHostB, base, 10000),
        StagedPair::segment(p.regionDeviceA, base + 10000, p.regionHostB, base + 10000, 30000)};
    std::vector<std::uint8_t> expected = p.hostB;
    applyWrite(p, segments, expected);

    TransferRequest r = p.request(TransferOp::kWrite, segments);
    r.notification = "round " + std::to_string(round);
    auto id = p.a->createTransfer(r);
    REQUIRE(id.isOk());
    auto stats = p.a->stats(*id);
    CHECK(stats->operations == 2);
    CHECK(stats->stagedOperations == 1);
    CHECK(stats->stagedBytes == 30000);
    REQUIRE(p.a->post(*id).isOk());
    // b checks its memory the moment the notification arrives: everything must be there.
    auto note = p.b->waitNotification(deadlineIn(10s));
    REQUIRE(note.isOk());
    CHECK(note->payload == *r.notification);
    CHECK(firstDifference(p.hostB, expected) == "");
    REQUIRE(p.a->wait(*id, deadlineIn(10s)).isOk());
    REQUIRE(p.a->release(*id).isOk());
  }
}

TEST_CASE("staged: transfers made from prepared lists stage their GPU entries", "[staged]") {
  StagedPair p;
  const std::vector<MemoryRange> local = {{p.regionDeviceA, 0, 8192}, {p.regionHostA, 0, 8192}};
  const std::vector<MemoryRange> remote = {{p.regionHostB, 100000, 8192},
                                           {p.regionHostB, 200000, 8192}};
  auto localList = p.a->prepareLocalList(local);
  auto remoteList = p.a->prepareRemoteList("b", remote);
  REQUIRE(localList.isOk());
  REQUIRE(remoteList.isOk());
  const std::uint32_t li[] = {0, 1};
  const std::uint32_t ri[] = {0, 1};
  auto id = p.a->makeTransfer(TransferOp::kWrite, *localList, li, *remoteList, ri, std::nullopt);
  REQUIRE(id.isOk());
  REQUIRE(p.a->post(*id).isOk());
  REQUIRE(p.a->wait(*id, deadlineIn(10s)).isOk());
  CHECK(std::memcmp(p.hostB.data() + 100000, p.deviceA.data(), 8192) == 0);
  CHECK(std::memcmp(p.hostB.data() + 200000, p.hostA.data(), 8192) == 0);
  CHECK(p.a->stats(*id)->stagedOperations == 1);
}

TEST_CASE("staged: cancel while copies are held ends the transfer with no byte landing",
          "[staged]") {
  StagedPair p;
  const std::vector<TransferSegment> segments = {
      StagedPair::segment(p.regionDeviceA, 0, p.regionHostB, 0, 512 * 1024)};
  const std::vector<std::uint8_t> before = p.hostB;
  auto id = p.a->createTransfer(p.request(TransferOp::kWrite, segments));
  REQUIRE(id.isOk());

  p.copiesA().pause();
  REQUIRE(p.a->post(*id).isOk());
  // The held copies run again while cancel waits for the move to drain.
  std::thread resume([&] {
    std::this_thread::sleep_for(50ms);
    p.copiesA().resume();
  });
  CHECK(p.a->cancel(*id).isOk());
  resume.join();
  const TransferStatus status = p.a->poll(*id);
  CHECK(status.state == TransferState::kFailed);
  CHECK(status.status.code() == StatusCode::kCancelled);
  std::this_thread::sleep_for(50ms);
  CHECK(firstDifference(p.hostB, before) == "");

  // The staging buffers went back: the same transfer runs to the end when posted again.
  std::vector<std::uint8_t> expected = p.hostB;
  applyWrite(p, segments, expected);
  REQUIRE(p.a->post(*id).isOk());
  REQUIRE(p.a->wait(*id, deadlineIn(10s)).isOk());
  p.syncB();
  CHECK(firstDifference(p.hostB, expected) == "");
}

TEST_CASE("staged: a wait's deadline passes while copies are held, then the move completes",
          "[staged]") {
  StagedPair p;
  const std::vector<TransferSegment> segments = {
      StagedPair::segment(p.regionDeviceA, 0, p.regionHostB, 0, 200000)};
  std::vector<std::uint8_t> expected = p.hostB;
  applyWrite(p, segments, expected);
  auto id = p.a->createTransfer(p.request(TransferOp::kWrite, segments));
  REQUIRE(id.isOk());
  p.copiesA().pause();
  REQUIRE(p.a->post(*id).isOk());
  CHECK(p.a->wait(*id, deadlineIn(50ms)).code() == StatusCode::kTimedOut);
  CHECK(p.a->poll(*id).state == TransferState::kPending);
  p.copiesA().resume();
  REQUIRE(p.a->wait(*id, deadlineIn(10s)).isOk());
  p.syncB();
  CHECK(firstDifference(p.hostB, expected) == "");
}

TEST_CASE("staged: a failed copy fails the transfer with that copy's status", "[staged]") {
  StagedPair p;
  auto op = GENERATE(TransferOp::kWrite, TransferOp::kRead);
  const std::vector<TransferSegment> segments = {
      StagedPair::segment(p.regionDeviceA, 0, p.regionHostB, 0, 400000)};
  auto id = p.a->createTransfer(p.request(op, segments));
  REQUIRE(id.isOk());
  // The third copy of this move fails.
  p.copiesA().failCopy(p.copiesA().copiesSubmitted() + 2,
                       Status(StatusCode::kInternal, "injected: cudaErrorLaunchFailure"));
  REQUIRE(p.a->post(*id).isOk());
  const Status outcome = p.a->wait(*id, deadlineIn(10s));
  CHECK(outcome.code() == StatusCode::kInternal);
  CHECK_THAT(outcome.message(), Catch::Contains("injected: cudaErrorLaunchFailure"));
  CHECK_THAT(outcome.message(), Catch::Contains("copy"));
  // It names the region and the device whose copy failed.
  CHECK_THAT(outcome.message(), Catch::Contains("GPU region 'a.gpu' on CUDA device 0"));

  // Nothing is left in flight: the next post of the same transfer succeeds.
  REQUIRE(p.a->post(*id).isOk());
  REQUIRE(p.a->wait(*id, deadlineIn(10s)).isOk());
}

TEST_CASE(
    "staged: remote GPU memory of a peer without a staging window is refused when the transfer "
    "is made",
    "[staged]") {
  StagedPair p(/*windowSlots=*/0);
  CHECK(p.b->windowServer() == nullptr);
  const bool fromDevice = GENERATE(true, false);
  const RegionId localRegion = fromDevice ? p.regionDeviceA : p.regionHostA;
  auto made = p.a->createTransfer(p.request(
      TransferOp::kWrite, {StagedPair::segment(p.regionHostA, 0, p.regionHostB, 0, 100),
                           StagedPair::segment(localRegion, 0, p.regionDeviceB, 0, 4096)}));
  REQUIRE_FALSE(made.isOk());
  CHECK(made.status().code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(made.status().message(), Catch::Contains("descriptor 1"));
  CHECK_THAT(made.status().message(), Catch::Contains("'b.gpu'"));
  CHECK_THAT(made.status().message(), Catch::Contains("CUDA"));
  CHECK_THAT(made.status().message(), Catch::Contains(p.a->gpuReach().whyNotCuda));
  CHECK_THAT(made.status().message(), Catch::Contains("publishes no staging window"));

  const std::vector<MemoryRange> remote = {{p.regionHostB, 0, 64}, {p.regionDeviceB, 0, 64}};
  auto list = p.a->prepareRemoteList("b", remote);
  REQUIRE_FALSE(list.isOk());
  CHECK(list.status().code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(list.status().message(), Catch::Contains("'b.gpu'"));
}

TEST_CASE("staged: the engine says GPU memory is staged, and why", "[staged]") {
  StagedPair p;
  CHECK_FALSE(p.a->gpuReach().cudaDirect);
  CHECK_FALSE(p.a->gpuReach().whyNotCuda.empty());
  CHECK_THAT(engine::describeGpuDirect(p.a->gpuReach()),
             Catch::StartsWith("GPUDirect: off, staged through host: "));
  // A GPU region this side cannot move is published without a transport key.
  bool sawDevice = false;
  for (const engine::RegionMetadata& region : p.a->localMetadata().regions) {
    if (region.info.kind != MemoryKind::kCuda) continue;
    sawDevice = true;
    CHECK(region.packedKey.empty());
  }
  CHECK(sawDevice);
}

}  // namespace kvx::test::staged
