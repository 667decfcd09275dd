// kvx-test-labels: ucx
// Target-side staging over UCX on shared memory: window slots are put and got by UCX, the
// peer's copy engine moves them to and from its (fake) GPU memory.
#include "tests/engine/staged/target_staged_cases.h"

namespace kvx::test {

StagedConfig stagedConfig() { return StagedConfig{"ucx", "shm"}; }

}  // namespace kvx::test
