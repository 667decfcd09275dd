// kvx-test-labels: unit
// The staged GPU path over the in-process transport, which moves host memory only: GPU
// regions are staged through host buffers exactly as on a UCX built without CUDA.
#include "tests/engine/staged/staged_cases.h"

namespace kvx::test {

StagedConfig stagedConfig() { return StagedConfig{"inproc", ""}; }

TEST_CASE("inproc: the reason GPU memory is staged names the transport", "[staged]") {
  staged::StagedPair p;
  CHECK_THAT(p.a->gpuReach().whyNotCuda, Catch::Contains("inproc"));
}

}  // namespace kvx::test
