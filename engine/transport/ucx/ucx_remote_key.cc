#include "engine/transport/ucx/ucx_remote_key.h"

#include <cstring>
#include <string>

#include "engine/transport/ucx/ucx_endpoint.h"
#include "engine/transport/ucx/ucx_frame.h"

namespace kvx::engine::ucx {
namespace {

constexpr std::size_t kBoundsSize = 8 + 8;  // region address, region length

}  // namespace

std::vector<std::uint8_t> packRemoteKey(std::uint64_t address, std::uint64_t length,
                                        std::span<const std::uint8_t> ucxKey) {
  std::vector<std::uint8_t> body(kBoundsSize + ucxKey.size());
  std::memcpy(body.data(), &address, 8);
  std::memcpy(body.data() + 8, &length, 8);
  if (!ucxKey.empty()) std::memcpy(body.data() + kBoundsSize, ucxKey.data(), ucxKey.size());
  return frame(kRemoteKeyMagic, body);
}

Result<PackedRemoteKey> parseRemoteKey(std::span<const std::uint8_t> packed) {
  KVX_ASSIGN_OR_RETURN(std::span<const std::uint8_t> body,
                       unframe(kRemoteKeyMagic, packed, "packed remote key"));
  if (body.size() <= kBoundsSize) {
    return invalidArgument("packed remote key of " + std::to_string(packed.size()) +
                           " bytes holds no UCX key");
  }
  PackedRemoteKey key;
  std::memcpy(&key.address, body.data(), 8);
  std::memcpy(&key.length, body.data() + 8, 8);
  key.ucxKey = body.subspan(kBoundsSize);
  return key;
}

UcxRemoteKey::~UcxRemoteKey() {
  UcxWorker::Lock lock(endpoint_->worker());
  releaseLocked();
  endpoint_->forgetKeyLocked(this);
}

ucp_rkey_h UcxRemoteKey::handleLocked() const {
  endpoint_->worker().mutex().assumeHeld();
  return handle_;
}

void UcxRemoteKey::releaseLocked() {
  endpoint_->worker().mutex().assumeHeld();
  if (handle_ == nullptr) return;
  ucp_rkey_destroy(handle_);
  handle_ = nullptr;
}

}  // namespace kvx::engine::ucx
