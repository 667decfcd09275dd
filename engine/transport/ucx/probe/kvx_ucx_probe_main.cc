// kvx-ucx-probe: checks a peer's UCX worker address and packed remote keys for an agent, in a
// process whose crash costs nothing (engine/transport/ucx/ucx_peer_probe.h). Reads the blobs
// from stdin (a u32 count, then per blob a u8 memory kind, a u32 length and the bytes, native
// byte order; the first is the framed address, the others packed keys), makes a UCX worker
// with the transports it is given (the agent's), creates an endpoint to the address, unpacks
// each key on it ("checking key I of N" before each, so that the caller knows which one a
// crash came from) and exits. Exit 0: UCX took them all; 3: UCX refused one (its reason on
// stdout); 2: bad input, or UCX would not start here. A crash is an answer too: the blob
// would have crashed the agent.
//   kvx-ucx-probe --transports SEL --net-devices DEV < blobs
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/transport/ucx/ucx_context.h"
#include "engine/transport/ucx/ucx_frame.h"
#include "engine/transport/ucx/ucx_remote_key.h"
#include "engine/transport/ucx/ucx_worker.h"

namespace {

constexpr std::size_t kMaxInputBytes = 1 << 20;

}  // namespace

int main(int argc, char** argv) {
  using namespace kvx::engine;
  // A crash here is an expected answer: no core file (and the caller turns UCX's backtrace
  // off: UCX reads UCX_HANDLE_ERRORS before main).
  rlimit noCore{0, 0};
  ::setrlimit(RLIMIT_CORE, &noCore);
  spdlog::set_level(spdlog::level::warn);  // the caller wants UCX's reason, not kvx's chatter
  TransportOptions options;
  options.agentName = "kvx-ucx-probe";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--transports") {
      options.transports = argv[i + 1];
    } else if (flag == "--net-devices") {
      options.netDevices = argv[i + 1];
    } else {
      std::printf("kvx-ucx-probe: unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  std::vector<std::uint8_t> input;
  std::cin >> std::noskipws;
  for (char c; std::cin.get(c);) {
    input.push_back(static_cast<std::uint8_t>(c));
    if (input.size() > kMaxInputBytes) {
      std::printf("kvx-ucx-probe: more than %zu bytes of input\n", kMaxInputBytes);
      return 2;
    }
  }
  struct Blob {
    kvx::MemoryKind kind;
    std::vector<std::uint8_t> bytes;
  };
  std::vector<Blob> blobs;
  std::size_t at = 0;
  auto take = [&](void* out, std::size_t n) {
    if (input.size() - at < n) return false;
    std::memcpy(out, input.data() + at, n);
    at += n;
    return true;
  };
  std::uint32_t count = 0;
  if (!take(&count, sizeof count) || count == 0) {
    std::printf("kvx-ucx-probe: no blobs in the input\n");
    return 2;
  }
  for (std::uint32_t i = 0; i < count; ++i) {
    std::uint8_t kind = 0;
    std::uint32_t length = 0;
    if (!take(&kind, 1) || !take(&length, sizeof length) || input.size() - at < length) {
      std::printf("kvx-ucx-probe: blob %u is cut short\n", i);
      return 2;
    }
    blobs.push_back(
        {static_cast<kvx::MemoryKind>(kind),
         std::vector<std::uint8_t>(input.begin() + static_cast<std::ptrdiff_t>(at),
                                   input.begin() + static_cast<std::ptrdiff_t>(at + length))});
    at += length;
  }
  auto context = ucx::UcxContext::create(options);
  if (!context.isOk()) {
    std::printf("%s\n", context.status().toString().c_str());
    return 2;
  }
  auto worker = ucx::UcxWorker::create(*context, options.agentName);
  if (!worker.isOk()) {
    std::printf("%s\n", worker.status().toString().c_str());
    return 2;
  }
  // The peer's address: an endpoint as UCX makes it from the address, without error
  // handling (in that mode UCX sends the peer nothing at creation over transports that
  // connect to an interface, shared memory and tcp), closed at once without notifying the
  // peer. The probe must not talk to the peer: a worker that vanishes right after its
  // wire-up request made UCX 1.13 crash in the peer, which tried to attach to the vanished
  // worker's shared memory.
  auto address = ucx::unframe(ucx::kAddressMagic, blobs[0].bytes, "peer transport address");
  if (!address.isOk()) {
    std::printf("%s\n", address.status().toString().c_str());
    return 2;
  }
  auto makeEndpoint = [&](const void* remote) {
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.address = static_cast<const ucp_address_t*>(remote);
    params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    ucp_ep_h ep = nullptr;
    const ucs_status_t created = ucp_ep_create((*worker)->handle(), &params, &ep);
    if (created != UCS_OK) {
      std::printf("ucp_ep_create: %s\n", ucs_status_string(created));
      std::fflush(stdout);
      std::_Exit(3);
    }
    return ep;
  };
  auto closeQuietly = [](ucp_ep_h ep) {
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t request = ucp_ep_close_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(request)) ucp_request_free(request);
  };
  const std::vector<std::uint8_t> paddedAddress = ucx::paddedForUcx(*address);
  closeQuietly(makeEndpoint(paddedAddress.data()));

  // The keys: unpacked on an endpoint to this probe's own worker, over the same transports.
  // Unpacking parses a key whole and attaches what it names (a shared-memory segment), as
  // the agent's UCX would; on an endpoint to the peer UCX may wire up with it, which the
  // probe must not.
  if (blobs.size() > 1) {
    const std::vector<std::uint8_t> own = (*worker)->address();
    auto ownBody = ucx::unframe(ucx::kAddressMagic, own, "own address");
    if (!ownBody.isOk()) {
      std::printf("%s\n", ownBody.status().toString().c_str());
      return 2;
    }
    const std::vector<std::uint8_t> paddedOwn = ucx::paddedForUcx(*ownBody);
    ucp_ep_h self = makeEndpoint(paddedOwn.data());
    for (std::size_t i = 1; i < blobs.size(); ++i) {
      std::printf("checking key %zu of %zu\n", i, blobs.size() - 1);
      std::fflush(stdout);
      auto packed = ucx::parseRemoteKey(blobs[i].bytes);
      if (!packed.isOk()) {
        std::printf("%s\n", packed.status().toString().c_str());
        std::_Exit(3);
      }
      ucp_rkey_h rkey = nullptr;
      const std::vector<std::uint8_t> paddedKey = ucx::paddedForUcx(packed->ucxKey);
      const ucs_status_t unpacked = ucp_ep_rkey_unpack(self, paddedKey.data(), &rkey);
      if (unpacked != UCS_OK) {
        std::printf("ucp_ep_rkey_unpack: %s\n", ucs_status_string(unpacked));
        std::fflush(stdout);
        std::_Exit(3);
      }
      ucp_rkey_destroy(rkey);
    }
  }
  std::fflush(stdout);
  // Leave without progressing the worker or closing the endpoint: both could send the peer
  // traffic from a worker about to vanish.
  std::_Exit(0);
}
