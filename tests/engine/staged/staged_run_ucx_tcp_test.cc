// kvx-test-labels: ucx
// The staged GPU path over UCX on tcp (loopback), where RMA is emulated by the peer's
// progress thread: staged chunks travel as ordinary puts and gets from registered buffers.
#include "tests/engine/staged/staged_cases.h"

namespace kvx::test {

StagedConfig stagedConfig() { return StagedConfig{"ucx", "tcp"}; }

}  // namespace kvx::test
