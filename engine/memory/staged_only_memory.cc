#include "engine/memory/staged_only_memory.h"

#include <spdlog/spdlog.h>

namespace kvx::engine {

StagedOnlyMemory::~StagedOnlyMemory() {
  if (owner_ == nullptr) return;
  const Status freed = owner_->freeDevice(address_);
  if (!freed.isOk()) spdlog::warn("freeing a staged-only region: {}", freed.toString());
}

}  // namespace kvx::engine
