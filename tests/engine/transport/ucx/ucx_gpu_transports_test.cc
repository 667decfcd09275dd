// kvx-test-labels: unit ucx
// Which UCX releases kvx lets put and get GPU memory, and the GPU transports of the loaded one.
#include "engine/transport/ucx/ucx_gpu_transports.h"

#include <ucp/api/ucp.h>

#include <catch2/catch.hpp>

namespace kvx::engine::ucx {
namespace {

TEST_CASE("ucx gpu: put/get takes GPU memory from UCX 1.16 on", "[ucx]") {
  CHECK_FALSE(ucxRmaTakesGpuMemory(1, 13));
  CHECK_FALSE(ucxRmaTakesGpuMemory(1, 15));
  CHECK(ucxRmaTakesGpuMemory(1, 16));
  CHECK(ucxRmaTakesGpuMemory(1, 19));
  CHECK(ucxRmaTakesGpuMemory(2, 0));
  CHECK_FALSE(ucxRmaTakesGpuMemory("1.13.1"));
  CHECK(ucxRmaTakesGpuMemory("1.16.0"));
  CHECK(ucxRmaTakesGpuMemory("1.18"));
  CHECK_FALSE(ucxRmaTakesGpuMemory("1"));
  CHECK_FALSE(ucxRmaTakesGpuMemory(""));
  CHECK_FALSE(ucxRmaTakesGpuMemory("one.sixteen"));
  CHECK(ucxGpuRmaLimit("1.17.0").empty());
  CHECK_THAT(ucxGpuRmaLimit("1.13.1"),
             Catch::StartsWith("UCX 1.13.1 was built with CUDA, but its one-sided put/get") &&
                 Catch::Contains("before UCX 1.16"));
}

TEST_CASE("ucx gpu: the loaded UCX's GPU transports only where its put/get can use them", "[ucx]") {
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  if (!ucxRmaTakesGpuMemory(major, minor)) {
    CHECK(ucxGpuTransports().empty());  // Debian's 1.13.1, with or without CUDA
  }
  for (const std::string& name : ucxGpuTransports()) {
    CHECK((name == "cuda_copy" || name == "cuda_ipc" || name == "gdr_copy"));
  }
}

}  // namespace
}  // namespace kvx::engine::ucx
