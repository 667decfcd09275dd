// kvx-test-labels: ucx
// The staged GPU path over UCX on shared memory. Debian's UCX has no CUDA support, so GPU
// regions (fake ones here) are staged through host buffers that UCX moves.
#include "tests/engine/staged/staged_cases.h"

namespace kvx::test {

StagedConfig stagedConfig() { return StagedConfig{"ucx", "shm"}; }

TEST_CASE("ucx/shm: the reason GPU memory is staged is UCX's", "[staged]") {
  staged::StagedPair p;
  if (p.a->gpuReach().cudaDirect) {
    WARN("this UCX moves CUDA memory: the staged path is not the live one here");
    return;
  }
  CHECK_THAT(p.a->gpuReach().whyNotCuda, Catch::Contains("was built without CUDA support"));
  CHECK_THAT(p.a->gpuReach().whyNotCuda, Catch::StartsWith("UCX "));
}

}  // namespace kvx::test
