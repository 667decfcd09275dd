#include "bench/bare/bare_ucp_node.h"

#include <sys/mman.h>

#include <cstring>
#include <thread>

#include "bench/bare/data_pattern.h"
#include "engine/gpu/gpu_runtime.h"
#include "engine/memory/page_population.h"
#include "engine/transport/transport.h"
#include "engine/transport/ucx/ucx_config.h"
#include "engine/transport/ucx/ucx_context.h"
#include "engine/transport/ucx/ucx_endpoint_info.h"
#include "engine/transport/ucx/ucx_status.h"

namespace kvx::bench {

using engine::ucx::fromUcs;
using engine::ucx::isError;
using engine::ucx::isRequest;
using engine::ucx::statusOf;

Result<std::unique_ptr<BareUcpNode>> BareUcpNode::create(const BareUcpOptions& options) {
  engine::TransportOptions transport;
  transport.agentName = "kvx-bare-ucp";
  transport.transports = options.transport;
  transport.netDevices = options.netDevices;
  KVX_ASSIGN_OR_RETURN(std::vector<engine::ucx::UcxSetting> settings,
                       engine::ucx::computeUcxSettings(transport));
  KVX_ASSIGN_OR_RETURN(engine::ucx::UcxConfigPtr config, engine::ucx::makeUcxConfig(settings));

  std::unique_ptr<BareUcpNode> node(new BareUcpNode(options));
  node->settings_ = engine::ucx::describeSettings(settings);

  // The same context and worker parameters as UcxContext::create and UcxWorker::init.
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;
  ucs_status_t status = ucp_init(&params, config.get(), &node->context_);
  if (status != UCS_OK) {
    node->context_ = nullptr;
    return fromUcs(status, "ucp_init with " + node->settings_);
  }
  if (options.memory == MemoryKind::kCuda) {
    // As kvx's direct path: GPU buffers only through a UCX whose put and get take them.
    KVX_ASSIGN_OR_RETURN(std::string whyNot,
                         engine::ucx::whyContextCannotMoveCuda(node->context_, settings));
    if (!whyNot.empty()) {
      return failedPrecondition("--memory cuda: this UCX cannot move GPU memory: " + whyNot);
    }
  }
  ucp_worker_params_t workerParams{};
  workerParams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  workerParams.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  status = ucp_worker_create(node->context_, &workerParams, &node->worker_);
  if (status != UCS_OK) {
    node->worker_ = nullptr;
    return fromUcs(status, "ucp_worker_create");
  }
  status = ucp_worker_get_efd(node->worker_, &node->eventFd_);
  if (status != UCS_OK) return fromUcs(status, "ucp_worker_get_efd");

  ucp_address_t* address = nullptr;
  std::size_t length = 0;
  status = ucp_worker_get_address(node->worker_, &address, &length);
  if (status != UCS_OK) return fromUcs(status, "ucp_worker_get_address");
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(address);
  node->address_.assign(bytes, bytes + length);
  ucp_worker_release_address(node->worker_, address);
  return node;
}

BareUcpNode::~BareUcpNode() {
  closeEndpoint(std::chrono::steady_clock::now() + std::chrono::milliseconds(100), true).ignore();
  if (memh_ != nullptr) ucp_mem_unmap(context_, memh_);
  if (ownsBuffer_) ::munmap(buffer_, bufferBytes_);
  device_.reset();  // after ucp_mem_unmap
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
}

Status BareUcpNode::mapBuffer(std::uint64_t bytes) {
  const BufferAlloc alloc = options_.alloc;
  const bool cuda = options_.memory == MemoryKind::kCuda;
  const std::string what = "map a " + std::to_string(bytes) + "-byte " +
                           std::string(toString(alloc)) + " buffer of " +
                           std::string(toString(options_.memory)) + " memory";
  if (memh_ != nullptr) return failedPrecondition(what + ": a buffer is already mapped");
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
  params.length = bytes;
  params.memory_type = cuda ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
  if (cuda) {
    // A UCX built with CUDA copies on the posting thread, which needs a current context.
    KVX_RETURN_IF_ERROR(engine::gpu::gpuRuntime().bindThread(options_.device));
    auto allocated = engine::gpu::DeviceAllocation::allocate(bytes, options_.device);
    if (!allocated.isOk()) return allocated.status().withContext(what);
    device_.emplace(std::move(allocated).value());
    buffer_ = static_cast<std::uint8_t*>(device_->get());
    bufferBytes_ = bytes;
    params.field_mask |= UCP_MEM_MAP_PARAM_FIELD_ADDRESS;
    params.address = buffer_;
  } else if (alloc == BufferAlloc::kUcx) {
    params.field_mask |= UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    params.flags = UCP_MEM_MAP_ALLOCATE;
  } else {
    void* memory =
        ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) return resourceExhausted(what + ": mmap: " + std::strerror(errno));
    buffer_ = static_cast<std::uint8_t*>(memory);
    bufferBytes_ = bytes;
    ownsBuffer_ = true;
    // Fault the pages in before registration, as a pool in use would be.
    std::memset(buffer_, 0, bytes);
    params.field_mask |= UCP_MEM_MAP_PARAM_FIELD_ADDRESS;
    params.address = memory;
  }
  ucs_status_t status = ucp_mem_map(context_, &params, &memh_);
  if (status != UCS_OK) {
    memh_ = nullptr;
    return fromUcs(status, what + ": ucp_mem_map");
  }
  if (alloc == BufferAlloc::kUcx) {
    ucp_mem_attr_t attr{};
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
    status = ucp_mem_query(memh_, &attr);
    if (status != UCS_OK) return fromUcs(status, what + ": ucp_mem_query");
    buffer_ = static_cast<std::uint8_t*>(attr.address);
    bufferBytes_ = bytes;
    std::memset(buffer_, 0, bytes);
  }
  return Status::ok();
}

ucp_request_param_t BareUcpNode::rmaParam() const {
  ucp_request_param_t param{};
  if (options_.memory == MemoryKind::kCuda) {
    param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    param.memory_type = UCS_MEMORY_TYPE_CUDA;
  }
  return param;
}

Status BareUcpNode::fillBuffer(std::uint64_t seed) {
  if (!device_) {
    fillPattern(buffer_, bufferBytes_, seed);
    return Status::ok();
  }
  std::vector<std::uint8_t> pattern(bufferBytes_);
  fillPattern(pattern.data(), bufferBytes_, seed);
  return device_->copyIn(0, std::as_bytes(std::span(pattern)));
}

Result<std::uint64_t> BareUcpNode::checksumBuffer() const {
  if (!device_) return bufferChecksum(buffer_, bufferBytes_);
  std::vector<std::uint8_t> copy(bufferBytes_);
  KVX_RETURN_IF_ERROR(device_->copyOut(0, std::as_writable_bytes(std::span(copy))));
  return bufferChecksum(copy.data(), bufferBytes_);
}

Result<std::vector<std::uint8_t>> BareUcpNode::packBufferKey() const {
  if (memh_ == nullptr) return failedPrecondition("pack the buffer's key: no buffer is mapped");
  void* packed = nullptr;
  std::size_t length = 0;
  const ucs_status_t status = ucp_rkey_pack(context_, memh_, &packed, &length);
  if (status != UCS_OK) return fromUcs(status, "ucp_rkey_pack");
  const auto* bytes = static_cast<const std::uint8_t*>(packed);
  std::vector<std::uint8_t> key(bytes, bytes + length);
  ucp_rkey_buffer_release(packed);
  return key;
}

void BareUcpNode::onEndpointError(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* self = static_cast<BareUcpNode*>(arg);
  self->epFailed_ = true;
  self->epStatus_ = status;
}

Status BareUcpNode::endpointError() const {
  if (!epFailed_) return Status::ok();
  return fromUcs(epStatus_, "the endpoint to the target (over " + lanes() + ") failed");
}

Status BareUcpNode::connect(std::span<const std::uint8_t> peerAddress,
                            std::span<const std::uint8_t> packedKey) {
  if (ep_ != nullptr) return failedPrecondition("connect: already connected");
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(peerAddress.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &BareUcpNode::onEndpointError;
  params.err_handler.arg = this;
  ucs_status_t status = ucp_ep_create(worker_, &params, &ep_);
  if (status != UCS_OK) {
    ep_ = nullptr;
    return fromUcs(status, "ucp_ep_create to a " + std::to_string(peerAddress.size()) +
                               "-byte worker address (settings " + settings_ + ")");
  }
  if (packedKey.empty()) return Status::ok();
  status = ucp_ep_rkey_unpack(ep_, packedKey.data(), &rkey_);
  if (status != UCS_OK) {
    rkey_ = nullptr;
    return fromUcs(status,
                   "ucp_ep_rkey_unpack of a " + std::to_string(packedKey.size()) + "-byte key");
  }
  return Status::ok();
}

Status BareUcpNode::populateRemote(std::uint64_t remoteAddress, std::uint64_t length) {
  // As kvx does when it prepares a peer's memory: on shared memory the target's buffer is
  // mapped here, and populating it keeps page faults out of the measured loop.
  void* mapped = nullptr;
  // A CUDA-capable UCX maps a peer's device memory too (cuda_ipc): never touched by the CPU.
  if (options_.memory != MemoryKind::kHost) return Status::ok();
  if (rkey_ == nullptr || ucp_rkey_ptr(rkey_, remoteAddress, &mapped) != UCS_OK) {
    return Status::ok();
  }
  return engine::populatePages(mapped, length);
}

std::string BareUcpNode::lanes() const {
  return ep_ == nullptr ? "unknown" : engine::ucx::describeEndpoint(ep_);
}

Status BareUcpNode::closeEndpoint(Deadline deadline, bool force) {
  if (ep_ == nullptr) return Status::ok();
  // UCX requires keys to be destroyed before their endpoint.
  if (rkey_ != nullptr) ucp_rkey_destroy(rkey_);
  rkey_ = nullptr;
  const std::string over = lanes();
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = force || epFailed_ ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  ucs_status_ptr_t request = ucp_ep_close_nbx(ep_, &param);
  ep_ = nullptr;
  if (isError(request)) return fromUcs(statusOf(request), "ucp_ep_close_nbx (over " + over + ")");
  if (!isRequest(request)) return Status::ok();
  while (ucp_request_check_status(request) == UCS_INPROGRESS &&
         std::chrono::steady_clock::now() < deadline) {
    if (ucp_worker_progress(worker_) == 0) std::this_thread::yield();
  }
  const ucs_status_t status = ucp_request_check_status(request);
  // Frees it now, or when UCX completes it.
  ucp_request_free(request);
  if (status == UCS_INPROGRESS) {
    return timedOut("closing the endpoint (over " + over + ") did not finish by the deadline");
  }
  if (status != UCS_OK && !force)
    return fromUcs(status, "closing the endpoint (over " + over + ")");
  return Status::ok();
}

}  // namespace kvx::bench
