#pragma once

// The checks about the host rather than one device: the IOMMU's mode, the locked-memory limit
// against the pool, and what the UCX library can move.

#include "doctor/check_result.h"
#include "doctor/system_facts.h"

namespace kvx::doctor {

// "iommu": ok when off or in passthrough, failed when translating, unknown when unclear.
CheckResult checkIommu(const SystemFacts& facts);

// "memlock": ok when the limit is unlimited or holds the pool, failed when it does not (n/a
// without an RDMA device: only RDMA registration pins memory).
CheckResult checkMemlock(const SystemFacts& facts);

// "ucx": the version, memory types, components and transports; failed when GPUs exist and UCX
// cannot move CUDA memory (built without CUDA, or a release before 1.16, whose put/get cannot
// take it), a warning without gdr_copy or without an RDMA transport.
CheckResult checkUcx(const SystemFacts& facts);

inline constexpr const char* kIommuFix =
    "boot with iommu=pt (Intel: intel_iommu=on iommu=pt; AMD: iommu=pt) or with the IOMMU off, "
    "then reboot";
inline constexpr const char* kMemlockFix =
    "raise the limit for the kvx process: `ulimit -l unlimited`; systemd: LimitMEMLOCK=infinity; "
    "containers: --ulimit memlock=-1; /etc/security/limits.conf: `* - memlock unlimited`";
inline constexpr const char* kUcxReleaseFix =
    "use UCX 1.16 or later built with CUDA (and gdrcopy); until then kvx stages GPU memory "
    "through host buffers";
inline constexpr const char* kUcxCudaFix =
    "use a UCX built with CUDA: ./configure --with-cuda=/usr/local/cuda --with-gdrcopy=/usr "
    "(Debian's libucx has no CUDA); until then kvx stages GPU memory through host buffers";

}  // namespace kvx::doctor
