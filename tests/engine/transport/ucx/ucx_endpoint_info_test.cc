// kvx-test-labels: unit ucx
// ucx_endpoint_info: the transport summary read from ucp_ep_print_info output.
#include "engine/transport/ucx/ucx_endpoint_info.h"

#include <catch2/catch.hpp>

namespace kvx::engine::ucx {
namespace {

// Captured from UCX 1.13.1 on this machine.
constexpr const char* kTcp = R"(#
# UCP endpoint
#
#               peer: <no debug data>
#                 lane[0]:  0:tcp/lo.0 md[0]                -> md[0]/tcp/sysdev[255] am am_bw#0 keepalive wireup
#
#                 am_send: 0..<egr/short>..8185..<egr/zcopy>..20553..<rndv>..(inf)
#
#                  rma_bw: mds rndv_rkey_size 9
#
)";

constexpr const char* kShm = R"(#
#                 lane[0]:  1:sysv/memory.0 md[1]           -> md[1]/sysv/sysdev[255] am am_bw#0 keepalive
#                 lane[1]:  2:posix/memory.0 md[2]          -> md[2]/posix/sysdev[255]
#                 lane[2]:  3:cma/memory.0 md[3]            -> md[3]/cma/sysdev[255] rma_bw#0
#                 lane[3]:  1:sysv/memory.0 md[1]           -> md[1]/sysv/sysdev[255] rma#0
)";

TEST_CASE("ucx endpoint info: lanes become a short transport list", "[ucx]") {
  CHECK(summarizeLanes(kTcp) == "tcp/lo");
  CHECK(summarizeLanes(kShm) == "sysv/memory, posix/memory, cma/memory");
  CHECK(summarizeLanes("") == "unknown");
  CHECK(summarizeLanes("lane[0]: garbage") == "unknown");
  CHECK(summarizeLanes("lane[0]:  4:rc_mlx5/mlx5_0:1.2 md[4]") == "rc_mlx5/mlx5_0:1");
}

TEST_CASE("ucx endpoint info: which lanes let the peer's process write into ours", "[ucx]") {
  CHECK_FALSE(lanesLetPeerWriteDirectly(summarizeLanes(kTcp)));
  CHECK(lanesLetPeerWriteDirectly(summarizeLanes(kShm)));
  CHECK(lanesLetPeerWriteDirectly("tcp/lo, cma/memory"));
  CHECK(lanesLetPeerWriteDirectly("cuda_copy/cuda, cuda_ipc/cuda"));
  CHECK_FALSE(lanesLetPeerWriteDirectly("rc_mlx5/mlx5_0:1, ud_mlx5/mlx5_0:1"));
  CHECK_FALSE(lanesLetPeerWriteDirectly("tcp/eth0, cuda_copy/cuda"));
  // Not knowing is the cautious answer.
  CHECK(lanesLetPeerWriteDirectly("unknown"));
}

}  // namespace
}  // namespace kvx::engine::ucx
