#include "doctor/ucx_probe.h"

#include <algorithm>

#include "engine/transport/ucx/ucx_gpu_transports.h"

namespace kvx::doctor {

bool UcxFacts::supportsCuda() const {
  return std::find(memoryTypes.begin(), memoryTypes.end(), "cuda") != memoryTypes.end();
}

bool UcxFacts::putGetMovesCuda() const {
  return supportsCuda() && engine::ucx::ucxRmaTakesGpuMemory(version);
}

bool UcxFacts::hasGdrCopy() const {
  return std::find(components.begin(), components.end(), "gdr_copy") != components.end();
}

std::unique_ptr<UcxProbe> makeUcxProbeFor(const SystemRoot& root) {
  const auto fixture = root.hostPath(kUcxFixtureFile);
  if (root.exists(kUcxFixtureFile)) return makeUcxFixtureProbe(fixture);
  return makeUcxLibraryProbe();
}

}  // namespace kvx::doctor
