#pragma once

// PeerMetadata on the wire: as a JSON object inside control-channel messages, and as a
// self-describing blob (Agent::exportMetadata / loadPeerMetadata) that is one frame of type
// kMetadataBlob wrapping the same JSON, so that magic and protocol version are checked when
// a blob is loaded.
//
// JSON shape (binary fields are lowercase hex):
//   {"name": "prefill-0", "incarnation": 1234, "transport": "ucx", "dataAddress": "a1b2..",
//    "regions": [{"id": 1, "name": "kv.layer0", "address": 140.., "length": 65536,
//                 "kind": "host", "device": -1, "exposed": true, "packedKey": "0f.."}],
//    "app": "{\"kv\": ...}"}
// ("stagingWindow" and "app" appear only when the agent has them.)
//
// Decoding checks every field (type, range, limits below) and the metadata as a whole
// (validateMetadata); errors are PROTOCOL_ERROR naming the field path. Stateless and
// thread-safe.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/peer/peer_metadata.h"
#include "kvx/agent_options.h"
#include "kvx/result.h"
#include "kvx/status.h"

namespace kvx::agent::metadata {

inline constexpr std::size_t kMaxAgentNameBytes = 256;
inline constexpr std::size_t kMaxTransportNameBytes = 64;
inline constexpr std::size_t kMaxRegionNameBytes = 256;
inline constexpr std::size_t kMaxRegions = 65536;
inline constexpr std::size_t kMaxPackedKeyBytes = 4096;
inline constexpr std::size_t kMaxDataAddressBytes = 64 * 1024;
inline constexpr std::int64_t kMaxDevice = 4095;
inline constexpr std::uint64_t kMaxWindowSlots = 4096;
inline constexpr std::uint64_t kMaxWindowSlotBytes = std::uint64_t{1} << 30;

// Checks an agent name: 1..256 bytes of [A-Za-z0-9._-]. `path` prefixes the error.
Status validateAgentName(std::string_view name, std::string_view path);

// Checks a region name as a peer's handshake checks it: 1..kMaxRegionNameBytes bytes without
// control characters. `path` prefixes the error. Registration applies it too, so that a
// name every peer would refuse is refused where it is given.
Status validateRegionName(std::string_view name, std::string_view path);

// Checks an application's description of its agent (AgentOptions::applicationInfo): at
// most kMaxApplicationInfoBytes of valid UTF-8. `path` prefixes the error.
Status validateApplicationInfo(std::string_view info, std::string_view path);

// Checks what the JSON types cannot: names, region ids non-zero and unique, region names
// unique, length > 0, address + length does not overflow, device matches kind, limits.
// Returns PROTOCOL_ERROR prefixed with `path` (e.g. "hello.metadata.regions[3].id: ...").
// Callers about to send their own metadata use it to fail early with a clear message.
Status validateMetadata(const engine::PeerMetadata& metadata, std::string_view path);

nlohmann::json metadataToJson(const engine::PeerMetadata& metadata);
// `path` is the field path of `value` in the enclosing document, used in errors.
Result<engine::PeerMetadata> metadataFromJson(const nlohmann::json& value, std::string_view path);

// A frame of type kMetadataBlob holding metadataToJson(metadata).
std::vector<std::uint8_t> encodeMetadataBlob(const engine::PeerMetadata& metadata);
// Exactly one complete kMetadataBlob frame of at most `maxBytes` payload, nothing after it.
Result<engine::PeerMetadata> decodeMetadataBlob(std::span<const std::uint8_t> blob,
                                                std::uint32_t maxBytes = 16u << 20);

}  // namespace kvx::agent::metadata
