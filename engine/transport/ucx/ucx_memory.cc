#include "engine/transport/ucx/ucx_memory.h"

#include <cstdio>
#include <string>

#include "engine/transport/ucx/ucx_remote_key.h"
#include "engine/transport/ucx/ucx_status.h"

namespace kvx::engine::ucx {
namespace {

std::string describeRange(const void* address, std::uint64_t length) {
  char text[64];
  std::snprintf(text, sizeof(text), "[%p+%llu)", address, static_cast<unsigned long long>(length));
  return text;
}

Status checkKind(const UcxWorker& worker, MemoryKind kind, const std::string& what) {
  if (kind == MemoryKind::kHost) return Status::ok();
  if (kind == MemoryKind::kCuda && !worker.context().supportsCuda()) {
    return unimplemented(what +
                         ": this UCX cannot move CUDA memory: " + worker.context().whyNotCuda());
  }
  if (kind == MemoryKind::kCuda) return Status::ok();
  return invalidArgument(what + ": unknown memory kind " + std::to_string(static_cast<int>(kind)));
}

}  // namespace

Result<std::unique_ptr<UcxMemory>> UcxMemory::registerRegion(std::shared_ptr<UcxWorker> worker,
                                                             void* address, std::uint64_t length,
                                                             MemoryKind kind) {
  const std::string what =
      "register " + std::string(toString(kind)) + " memory " + describeRange(address, length);
  if (address == nullptr) return invalidArgument(what + ": the address is null");
  if (length == 0) return invalidArgument(what + ": the length is zero");
  KVX_RETURN_IF_ERROR(checkKind(*worker, kind, what));
  std::unique_ptr<UcxMemory> memory(new UcxMemory(std::move(worker), kind));
  KVX_RETURN_IF_ERROR(memory->map(address, length, false).withContext(what));
  return memory;
}

Result<std::unique_ptr<UcxMemory>> UcxMemory::allocate(std::shared_ptr<UcxWorker> worker,
                                                       std::uint64_t length, MemoryKind kind) {
  const std::string what =
      "allocate " + std::to_string(length) + " bytes of " + std::string(toString(kind)) + " memory";
  if (length == 0) return invalidArgument(what + ": the length is zero");
  KVX_RETURN_IF_ERROR(checkKind(*worker, kind, what));
  std::unique_ptr<UcxMemory> memory(new UcxMemory(std::move(worker), kind));
  KVX_RETURN_IF_ERROR(memory->map(nullptr, length, true).withContext(what));
  return memory;
}

Status UcxMemory::map(void* address, std::uint64_t length, bool allocate) {
  UcxWorker::Lock lock(*worker_);
  ucp_context_h context = worker_->context().handle();

  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
  params.length = length;
  params.memory_type = kind_ == MemoryKind::kCuda ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
  if (allocate) {
    params.field_mask |= UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    params.flags = UCP_MEM_MAP_ALLOCATE;
  } else {
    params.field_mask |= UCP_MEM_MAP_PARAM_FIELD_ADDRESS;
    params.address = address;
  }
  ucs_status_t status = ucp_mem_map(context, &params, &memh_);
  if (status != UCS_OK) {
    memh_ = nullptr;
    return fromUcs(status, "ucp_mem_map");
  }

  address_ = address;
  length_ = length;
  if (allocate) {
    ucp_mem_attr_t attr{};
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
    status = ucp_mem_query(memh_, &attr);
    if (status != UCS_OK) return fromUcs(status, "ucp_mem_query");
    address_ = attr.address;
  }

  void* rkey = nullptr;
  std::size_t rkeyLength = 0;
  status = ucp_rkey_pack(context, memh_, &rkey, &rkeyLength);
  if (status != UCS_OK) return fromUcs(status, "ucp_rkey_pack");
  packedKey_ =
      packRemoteKey(reinterpret_cast<std::uint64_t>(address_), length_,
                    std::span<const std::uint8_t>(static_cast<std::uint8_t*>(rkey), rkeyLength));
  ucp_rkey_buffer_release(rkey);
  return Status::ok();
}

UcxMemory::~UcxMemory() {
  if (memh_ == nullptr) return;
  UcxWorker::Lock lock(*worker_);
  ucp_mem_unmap(worker_->context().handle(), memh_);
}

bool UcxMemory::contains(const void* address, std::uint64_t length) const {
  const auto begin = reinterpret_cast<std::uintptr_t>(address_);
  const auto start = reinterpret_cast<std::uintptr_t>(address);
  return start >= begin && start - begin <= length_ && length <= length_ - (start - begin);
}

}  // namespace kvx::engine::ucx
