// kvx-test-labels: ucx
// Target-side staging over UCX on tcp (loopback), where RMA into the window is emulated by
// the peer's progress thread, which also serves the window's requests.
#include "tests/engine/staged/target_staged_cases.h"

namespace kvx::test {

StagedConfig stagedConfig() { return StagedConfig{"ucx", "tcp"}; }

}  // namespace kvx::test
