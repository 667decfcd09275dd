#include "kvx/kv_types.h"

namespace kvx {

std::string_view toString(KvRole role) { return role == KvRole::kPrefill ? "prefill" : "decode"; }

std::optional<KvRole> parseKvRole(std::string_view text) {
  if (text == "prefill") return KvRole::kPrefill;
  if (text == "decode") return KvRole::kDecode;
  return std::nullopt;
}

std::string_view toString(KvMode mode) { return mode == KvMode::kPush ? "push" : "pull"; }

std::optional<KvMode> parseKvMode(std::string_view text) {
  if (text == "push") return KvMode::kPush;
  if (text == "pull") return KvMode::kPull;
  return std::nullopt;
}

std::string_view toString(KvRequestState state) {
  switch (state) {
    case KvRequestState::kQueued: return "queued";
    case KvRequestState::kPlaced: return "placed";
    case KvRequestState::kTransferring: return "transferring";
    case KvRequestState::kComplete: return "complete";
    case KvRequestState::kConsumed: return "consumed";
    case KvRequestState::kReleased: return "released";
    case KvRequestState::kFailed: return "failed";
  }
  return "unknown";
}

}  // namespace kvx
