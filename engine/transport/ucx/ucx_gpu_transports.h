#pragma once

// The transports of the loaded UCX library that move GPU memory, by their UCX_TLS names:
// "cuda_copy" (device <-> host copies in one process), "cuda_ipc" (device to device between
// processes of one node), "gdr_copy" (small copies through GPUDirect's CPU mapping), each
// listed only when its module loads and the library's put/get can use them (below). Empty for
// a UCX built without CUDA (Debian's 1.13.1). kvx adds them to its "shm" and "tcp" selections
// (ucx_config.h), so that a UCX built with CUDA moves device memory without the user naming
// them.
//
// Thread safety: safe from any thread; the library is asked once per process.

#include <string>
#include <string_view>
#include <vector>

namespace kvx::engine::ucx {

const std::vector<std::string>& ucxGpuTransports();
// The library's GPU transports whatever its release: whether it was built with CUDA.
const std::vector<std::string>& ucxLibraryGpuTransports();

// Whether the one-sided put/get (ucp_put_nbx, ucp_get_nbx) of UCX `major.minor` takes GPU
// memory: from 1.16 on. Older UCP selects RMA lanes only among transports that can copy with
// the CPU (short and bcopy operations), so cuda_ipc, which only copies with the GPU, never
// serves a put, and a put of device memory falls back to UCX's emulation over active messages,
// which reads the buffer with memcpy(). Measured here with 1.13.1 built with CUDA, on an H100:
// a segfault inside ucp_put_nbx. UCX's maintainers name 1.16 as the first release where GPU
// memory works with ucp_put_nbx by default (openucx/ucx issue 9533; 1.15 needs
// UCX_PROTO_ENABLE=y, which kvx does not set).
bool ucxRmaTakesGpuMemory(unsigned major, unsigned minor);
// The same for a version string such as "1.13.1"; false when it does not parse.
bool ucxRmaTakesGpuMemory(std::string_view version);

// Why a UCX `version` ("1.13.1") whose memory types include CUDA still cannot move it for kvx,
// or "" when it can.
std::string ucxGpuRmaLimit(std::string_view version);

// Why a UCX `version`, built with CUDA or not, cannot move CUDA memory for kvx, or "" when it
// can: "UCX 1.13.1 was built without CUDA support", or ucxGpuRmaLimit's reason.
std::string ucxWhyNotCuda(std::string_view version, bool builtWithCuda);

}  // namespace kvx::engine::ucx
