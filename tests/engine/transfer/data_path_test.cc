// kvx-test-labels: unit
#include "engine/transfer/data_path.h"

#include <catch2/catch.hpp>

using namespace kvx;
using namespace kvx::engine;

TEST_CASE("host memory always goes direct", "[data_path]") {
  for (bool cuda : {false, true}) {
    for (bool keyed : {false, true}) {
      CHECK(chooseDataPath(MemoryKind::kHost, MemoryKind::kHost, keyed, cuda) == DataPath::kDirect);
    }
  }
}

TEST_CASE("local GPU memory is staged when the transport cannot move it", "[data_path]") {
  CHECK(chooseDataPath(MemoryKind::kCuda, MemoryKind::kHost, true, false) ==
        DataPath::kStagedLocal);
  CHECK(chooseDataPath(MemoryKind::kCuda, MemoryKind::kHost, true, true) == DataPath::kDirect);
}

TEST_CASE("remote GPU memory goes direct only when both sides' transports reach it",
          "[data_path]") {
  // This side cannot move CUDA memory: nothing reaches the peer's GPU without its help.
  CHECK(chooseDataPath(MemoryKind::kHost, MemoryKind::kCuda, true, false) ==
        DataPath::kNeedsTargetStaging);
  CHECK(chooseDataPath(MemoryKind::kCuda, MemoryKind::kCuda, true, false) ==
        DataPath::kNeedsTargetStaging);
  // The peer published it without a key: its transport could not register it.
  CHECK(chooseDataPath(MemoryKind::kHost, MemoryKind::kCuda, false, true) ==
        DataPath::kNeedsTargetStaging);
  CHECK(chooseDataPath(MemoryKind::kCuda, MemoryKind::kCuda, false, true) ==
        DataPath::kNeedsTargetStaging);
  CHECK(chooseDataPath(MemoryKind::kHost, MemoryKind::kCuda, true, true) == DataPath::kDirect);
  CHECK(chooseDataPath(MemoryKind::kCuda, MemoryKind::kCuda, true, true) == DataPath::kDirect);
}

TEST_CASE("the GPUDirect line says whether GPU memory is staged, and why", "[data_path]") {
  const GpuReach off{false, "UCX 1.13.1 was built without CUDA support"};
  CHECK(describeGpuDirect(off) ==
        "GPUDirect: off, staged through host: UCX 1.13.1 was built without CUDA support");
  CHECK_THAT(describeGpuDirect(GpuReach{true, ""}), Catch::StartsWith("GPUDirect: on"));
}

TEST_CASE("a refused remote GPU region is named with the reason and the way out", "[data_path]") {
  RegionInfo remote;
  remote.name = "kv.layer0";
  remote.kind = MemoryKind::kCuda;
  remote.device = 2;
  const Status off = targetStagingRefused(
      7, remote, "decode-0", GpuReach{false, "UCX 1.13.1 was built without CUDA support"});
  CHECK(off.code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(off.message(), Catch::Contains("descriptor 7"));
  CHECK_THAT(off.message(), Catch::Contains("'kv.layer0' of peer 'decode-0'"));
  CHECK_THAT(off.message(), Catch::Contains("device 2"));
  CHECK_THAT(off.message(), Catch::Contains("UCX 1.13.1 was built without CUDA support"));
  CHECK_THAT(off.message(), Catch::Contains("host region"));

  const Status keyless = targetStagingRefused(0, remote, "decode-0", GpuReach{true, ""});
  CHECK_THAT(keyless.message(), Catch::Contains("without a transport key"));
}

TEST_CASE("remote GPU memory without a key goes through the peer's staging window", "[data_path]") {
  // From host memory, or from local GPU memory this side's transport reaches: the peer stages.
  CHECK(chooseDataPath(MemoryKind::kHost, MemoryKind::kCuda, false, false, true) ==
        DataPath::kStagedRemote);
  CHECK(chooseDataPath(MemoryKind::kCuda, MemoryKind::kCuda, false, true, true) ==
        DataPath::kStagedRemote);
  // From local GPU memory this side cannot move either: both sides stage.
  CHECK(chooseDataPath(MemoryKind::kCuda, MemoryKind::kCuda, false, false, true) ==
        DataPath::kStagedBoth);
  // A keyed region is not the window's: its owner moves it directly, this side cannot.
  CHECK(chooseDataPath(MemoryKind::kHost, MemoryKind::kCuda, true, false, true) ==
        DataPath::kNeedsTargetStaging);
  // Without a window, as before.
  CHECK(chooseDataPath(MemoryKind::kHost, MemoryKind::kCuda, false, false, false) ==
        DataPath::kNeedsTargetStaging);
  CHECK(stagedRemotely(DataPath::kStagedBoth));
  CHECK_FALSE(stagedRemotely(DataPath::kStagedLocal));
  CHECK(toString(DataPath::kStagedBoth) == "staged through host on both sides");
}

TEST_CASE("a refusal for a peer without a staging window says so", "[data_path]") {
  RegionInfo remote;
  remote.name = "kv.layer0";
  remote.kind = MemoryKind::kCuda;
  const Status refused = targetStagingRefused(
      0, remote, "decode-0", GpuReach{false, "UCX 1.13.1 was built without CUDA support"});
  CHECK_THAT(refused.message(), Catch::Contains("peer 'decode-0' publishes no staging window"));
}
