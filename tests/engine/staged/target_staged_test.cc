// kvx-test-labels: unit
// Target-side staging over the in-process transport, which moves host memory only: the
// peer's GPU regions are reached through its staging window, as on a UCX built without CUDA.
#include "tests/engine/staged/target_staged_cases.h"

namespace kvx::test {

StagedConfig stagedConfig() { return StagedConfig{"inproc", ""}; }

}  // namespace kvx::test
