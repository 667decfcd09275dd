// kvx-test-labels: unit
// How an agent's GPU path choice becomes its reach, and how the GPU memory of an agent and
// a peer is described per peer (engine/transfer/data_path.h).
#include <catch2/catch.hpp>

#include "engine/transfer/data_path.h"

using namespace kvx;
using namespace kvx::engine;

namespace {

const std::string kNoCuda = "UCX 1.13.1 was built without CUDA support";

GpuMemorySides sides(GpuReach reach) {
  GpuMemorySides s;
  s.reach = std::move(reach);
  return s;
}

}  // namespace

TEST_CASE("the gpu path decides the reach with the transport", "[data_path][gpu_path]") {
  const GpuReach automatic = gpuReachOf(true, "", GpuPath::kAuto);
  CHECK(automatic.cudaDirect);
  CHECK(automatic.whyNotCuda.empty());
  CHECK(gpuReachOf(true, "", GpuPath::kDirect).cudaDirect);

  // Staged by choice, though the transport could move it.
  const GpuReach staged = gpuReachOf(true, "", GpuPath::kStaged);
  CHECK_FALSE(staged.cudaDirect);
  CHECK_THAT(staged.whyNotCuda, Catch::Contains("gpu path 'staged'"));
  CHECK_THAT(describeGpuDirect(staged), Catch::StartsWith("GPUDirect: off, staged through host: "));

  // A transport that cannot: its reason, whatever the path.
  for (GpuPath path : {GpuPath::kAuto, GpuPath::kDirect, GpuPath::kStaged}) {
    const GpuReach reach = gpuReachOf(false, kNoCuda, path);
    CHECK_FALSE(reach.cudaDirect);
    CHECK(reach.whyNotCuda == kNoCuda);
    CHECK(reach.path == path);
  }
  CHECK(describeGpuDirect(gpuReachOf(false, kNoCuda, GpuPath::kAuto)) ==
        "GPUDirect: off, staged through host: " + kNoCuda);
  CHECK(describeGpuDirect(gpuReachOf(false, kNoCuda, GpuPath::kDirect)) ==
        "GPUDirect: off, and GPU memory is refused (gpu path 'direct'): " + kNoCuda);

  // A transport that moves CUDA memory itself but not by GPUDirect (the socket transport)
  // is not reported as GPUDirect.
  GpuReach copied = gpuReachOf(true, "", GpuPath::kDirect);
  CHECK(describeGpuDirect(copied) == "GPUDirect: on (the transport moves CUDA memory itself)");
  copied.cudaHow = "through host memory";
  CHECK(describeGpuDirect(copied) ==
        "GPUDirect: off; the transport moves CUDA memory itself, through host memory");
}

TEST_CASE("GPU memory per peer: host only, staged locally, through the peer's window",
          "[data_path][gpu_path]") {
  const GpuReach noCuda = gpuReachOf(false, kNoCuda, GpuPath::kAuto);
  CHECK(describeGpuMemory(sides(noCuda)) == "no GPU memory on either side");

  GpuMemorySides local = sides(noCuda);
  local.localStaged = 2;
  CHECK(describeGpuMemory(local) ==
        "GPU memory: staged through host (" + kNoCuda + "); peer's GPU memory: none exposed");

  GpuMemorySides window = sides(noCuda);
  window.peerUnkeyed = 1;
  window.peerWindow = true;
  CHECK(describeGpuMemory(window) ==
        "GPU memory: none here; peer's GPU memory: through its staging window");

  GpuMemorySides both = window;
  both.localStaged = 1;
  CHECK(describeGpuMemory(both) == "GPU memory: staged through host (" + kNoCuda +
                                       "); peer's GPU memory: through its staging window");

  GpuMemorySides noWindow = sides(noCuda);
  noWindow.peerUnkeyed = 1;
  CHECK_THAT(describeGpuMemory(noWindow),
             Catch::EndsWith("peer's GPU memory: not reachable: the peer stages it but "
                             "publishes no staging window"));
}

TEST_CASE("GPU memory per peer: direct, and keyed memory this side cannot address",
          "[data_path][gpu_path]") {
  GpuMemorySides direct = sides(gpuReachOf(true, "", GpuPath::kAuto));
  direct.localDirect = 1;
  direct.peerKeyed = 1;
  CHECK(describeGpuMemory(direct) ==
        "GPU memory: direct (the transport moves it itself); peer's GPU memory: direct");
  // ... and how, when that is not GPUDirect.
  direct.reach.cudaHow = "through host memory";
  CHECK(describeGpuMemory(direct) ==
        "GPU memory: direct (the transport moves it itself, through host memory); peer's GPU "
        "memory: direct");

  // A staged agent and a peer that registered its GPU memory with its transport.
  GpuMemorySides staged = sides(gpuReachOf(true, "", GpuPath::kStaged));
  staged.localStaged = 1;
  staged.peerKeyed = 1;
  staged.peerUnkeyed = 1;
  staged.peerWindow = true;
  const std::string text = describeGpuMemory(staged);
  CHECK_THAT(text, Catch::StartsWith("GPU memory: staged through host (gpu path 'staged'"));
  CHECK_THAT(text, Catch::Contains("peer's GPU memory: not reachable: it is registered with the "
                                   "peer's transport"));
  CHECK_THAT(text, Catch::EndsWith(" and through its staging window"));
}
