#include "doctor/host_checks.h"

#include <algorithm>

#include "doctor/byte_count.h"
#include "engine/transport/ucx/ucx_gpu_transports.h"

namespace kvx::doctor {
namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
  return text.empty() ? "none" : text;
}

bool hasRdmaTransport(const UcxFacts& ucx) {
  return std::any_of(ucx.transports.begin(), ucx.transports.end(), [](const std::string& tl) {
    return tl.rfind("rc_", 0) == 0 || tl.rfind("dc_", 0) == 0 || tl.rfind("ud_", 0) == 0;
  });
}

}  // namespace

CheckResult checkIommu(const SystemFacts& facts) {
  const auto& iommu = facts.iommu;
  CheckResult result{"iommu", "IOMMU mode", CheckState::kOk, "", "", {}};
  result.found = std::string(toString(iommu.mode)) + ": " + iommu.evidence;
  if (!iommu.units.empty()) result.details.push_back("IOMMU units: " + joined(iommu.units));
  result.details.push_back("kernel command line IOMMU flags: " + joined(iommu.cmdlineFlags));
  switch (iommu.mode) {
    case IommuMode::kOff:
    case IommuMode::kPassthrough: break;
    case IommuMode::kTranslated:
      result.state = CheckState::kFailed;
      result.fix = kIommuFix;
      break;
    case IommuMode::kUnknown:
      result.state = CheckState::kUnknown;
      result.fix = kIommuFix;
      break;
  }
  return result;
}

CheckResult checkMemlock(const SystemFacts& facts) {
  const auto& limit = facts.memlock;
  CheckResult result{"memlock", "locked-memory limit", CheckState::kOk, "", "", {}};
  const std::string pool = formatBytes(facts.poolBytes);
  if (!limit.known) {
    result.state = CheckState::kUnknown;
    result.found = "not readable from " + limit.source;
    result.fix = kMemlockFix;
  } else if (limit.unlimited) {
    result.found = "unlimited (" + limit.source + ")";
  } else if (limit.bytes >= facts.poolBytes) {
    result.found =
        formatBytes(limit.bytes) + " (" + limit.source + "), enough for the " + pool + " pool";
  } else if (facts.nics.nics.empty()) {
    // Only RDMA registration pins memory; shared memory and TCP do not.
    result.state = CheckState::kNotApplicable;
    result.found = formatBytes(limit.bytes) + " (" + limit.source + "), below the " + pool +
                   " pool; it would matter for RDMA registration, and there is no RDMA device";
    result.fix = kMemlockFix;
  } else {
    result.state = CheckState::kFailed;
    result.found = formatBytes(limit.bytes) + " (" + limit.source + "), below the " + pool +
                   " pool: registering it for RDMA fails";
    result.fix = kMemlockFix;
  }
  return result;
}

CheckResult checkUcx(const SystemFacts& facts) {
  CheckResult result{"ucx", "UCX", CheckState::kOk, "", "", {}};
  const bool gpus = !facts.gpus.gpus.empty();
  if (!facts.ucx.isOk()) {
    result.state = CheckState::kFailed;
    result.found = "UCX could not be queried: " + facts.ucx.status().message();
    result.fix = "check that libucp loads and the UCX_* variables in the environment are valid";
    return result;
  }
  const UcxFacts& ucx = facts.ucx.value();
  result.details.push_back("memory types: " + joined(ucx.memoryTypes));
  result.details.push_back("components: " + joined(ucx.components));
  result.details.push_back("transports: " + joined(ucx.transports));
  result.details.push_back("source: " + ucx.source);
  result.found = "UCX " + ucx.version;
  if (!ucx.supportsCuda()) {
    result.found += " cannot move CUDA memory (memory types: " + joined(ucx.memoryTypes) + ")";
    result.state = gpus ? CheckState::kFailed : CheckState::kNotApplicable;
    if (gpus) result.fix = kUcxCudaFix;
    if (!gpus) result.found += "; not needed without a GPU";
    return result;
  }
  if (!ucx.putGetMovesCuda()) {
    result.found = engine::ucx::ucxGpuRmaLimit(ucx.version);
    result.state = gpus ? CheckState::kFailed : CheckState::kNotApplicable;
    if (gpus) result.fix = kUcxReleaseFix;
    if (!gpus) result.found += "; not needed without a GPU";
    return result;
  }
  result.found += " moves CUDA memory";
  if (gpus && !ucx.hasGdrCopy()) {
    result.state = CheckState::kWarning;
    result.found += ", but has no gdr_copy transport: small GPU transfers are slower";
    result.fix = "install gdrcopy (the gdrdrv module and libgdrapi) and build UCX --with-gdrcopy";
  }
  if (!facts.nics.nics.empty() && !hasRdmaTransport(ucx)) {
    result.state = worse(result.state, CheckState::kWarning);
    result.found += "; no RDMA transport (rc/dc/ud) although RDMA devices exist";
    result.fix += std::string(result.fix.empty() ? "" : "; ") +
                  "build UCX with verbs (--with-verbs --with-mlx5-dv) and check UCX_TLS";
  }
  return result;
}

}  // namespace kvx::doctor
