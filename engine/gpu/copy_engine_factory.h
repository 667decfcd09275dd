#pragma once

// createCopyEngine(): the entry point to the real copy engine. Thread safety: any thread.

#include <memory>

#include "engine/gpu/copy_engine.h"
#include "kvx/result.h"

namespace kvx::engine::gpu {

// The CUDA copy engine on `options.device` when CUDA is compiled in and the device is
// visible; otherwise why not: UNIMPLEMENTED "built without CUDA", FAILED_PRECONDITION "no
// CUDA device visible (<the runtime's reason>)", INVALID_ARGUMENT for a device out of range.
Result<std::unique_ptr<CopyEngine>> createCopyEngine(const CopyEngineOptions& options = {});

}  // namespace kvx::engine::gpu
