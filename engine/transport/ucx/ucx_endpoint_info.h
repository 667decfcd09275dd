#pragma once

// What UCX chose to carry an endpoint's traffic, for logs and Endpoint::description().
// UCX 1.13 has no query for an endpoint's transports (ucp_ep_query reports only names and
// socket addresses), so this reads the lanes from ucp_ep_print_info.

#include <ucp/api/ucp.h>

#include <string>
#include <string_view>

namespace kvx::engine::ucx {

// "tcp/lo" or "sysv/memory, posix/memory": the distinct transport/device pairs of the
// "lane[N]: I:tl/dev.P ..." lines in ucp_ep_print_info output, in lane order, without the
// path index. "unknown" when there are none.
std::string summarizeLanes(std::string_view printInfo);

// Whether a summary of summarizeLanes names a transport through which the peer's process
// copies into this process's memory itself: the shared-memory ones (posix, sysv, xpmem),
// cross-memory attach (cma, knem) and GPU IPC (cuda_ipc, rocm_ipc); also "unknown", where
// this cannot be told (Endpoint::peerWritesDirectly).
bool lanesLetPeerWriteDirectly(std::string_view summary);

// summarizeLanes of ucp_ep_print_info(ep).
std::string describeEndpoint(ucp_ep_h ep);

}  // namespace kvx::engine::ucx
