#include "agent/metadata/metadata_codec.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>
#include <utility>

#include "agent/channel/frame.h"
#include "agent/channel/message_type.h"
#include "json/json_reader.h"

namespace kvx::agent::metadata {
namespace {

using jsonio::fieldError;
using jsonio::JsonReader;
using jsonio::quoteForError;
using nlohmann::json;

bool isNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

Status validateToken(std::string_view text, std::string_view path, std::size_t minBytes,
                     std::size_t maxBytes) {
  bool ok = text.size() >= minBytes && text.size() <= maxBytes;
  for (char c : text) ok = ok && isNameChar(c);
  if (ok) return Status::ok();
  return jsonio::fieldError(
      path, std::to_string(minBytes) + ".." + std::to_string(maxBytes) + " bytes of [A-Za-z0-9._-]",
      jsonio::quoteForError(text) + " (" + std::to_string(text.size()) + " bytes)");
}

std::string regionPath(std::string_view path, std::size_t index) {
  return std::string(path) + ".regions[" + std::to_string(index) + "]";
}

Status validateRegion(const engine::RegionMetadata& region, const std::string& path) {
  const RegionInfo& info = region.info;
  if (!info.id.isValid()) return jsonio::fieldError(path + ".id", "non-zero region id", "0");
  KVX_RETURN_IF_ERROR(validateRegionName(info.name, path + ".name"));
  if (info.length == 0) return jsonio::fieldError(path + ".length", "length > 0", "0");
  if (info.address > std::numeric_limits<std::uint64_t>::max() - info.length) {
    return jsonio::fieldError(
        path + ".length", "a length that does not overflow address " + std::to_string(info.address),
        std::to_string(info.length));
  }
  if (info.device < -1 || info.device > kMaxDevice) {
    return jsonio::fieldError(path + ".device",
                              "integer in [-1, " + std::to_string(kMaxDevice) + "]",
                              std::to_string(info.device));
  }
  if (info.kind == MemoryKind::kCuda && info.device < 0) {
    return jsonio::fieldError(path + ".device", "a CUDA device ordinal >= 0 for kind 'cuda'",
                              std::to_string(info.device));
  }
  if (info.kind != MemoryKind::kHost && info.kind != MemoryKind::kCuda) {
    return jsonio::fieldError(path + ".kind", "memory kind",
                              std::to_string(static_cast<int>(info.kind)));
  }
  if (region.packedKey.size() > kMaxPackedKeyBytes) {
    return jsonio::fieldError(path + ".packedKey",
                              "at most " + std::to_string(kMaxPackedKeyBytes) + " bytes",
                              std::to_string(region.packedKey.size()) + " bytes");
  }
  return Status::ok();
}

Result<engine::RegionMetadata> regionFromJson(const json& value, std::string path) {
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader reader,
                       jsonio::JsonReader::object(value, std::move(path)));
  engine::RegionMetadata region;
  RegionInfo& info = region.info;
  KVX_ASSIGN_OR_RETURN(std::uint64_t id, reader.unsignedInteger("id", 1));
  info.id = RegionId(id);
  KVX_ASSIGN_OR_RETURN(info.name, reader.string("name", kMaxRegionNameBytes));
  KVX_ASSIGN_OR_RETURN(info.address, reader.unsignedInteger("address"));
  KVX_ASSIGN_OR_RETURN(info.length, reader.unsignedInteger("length", 1));
  KVX_ASSIGN_OR_RETURN(std::string kind, reader.string("kind", 16));
  const std::optional<MemoryKind> parsed = parseMemoryKind(kind);
  if (!parsed)
    return jsonio::fieldError(reader.fieldPath("kind"), "'host' or 'cuda'",
                              jsonio::quoteForError(kind));
  info.kind = *parsed;
  KVX_ASSIGN_OR_RETURN(std::int64_t device, reader.integer("device", -1, kMaxDevice));
  info.device = static_cast<int>(device);
  KVX_ASSIGN_OR_RETURN(info.exposed, reader.boolean("exposed"));
  KVX_ASSIGN_OR_RETURN(region.packedKey, reader.hexBytes("packedKey", kMaxPackedKeyBytes));
  return region;
}

}  // namespace

Status validateRegionName(std::string_view name, std::string_view path) {
  bool ok = !name.empty() && name.size() <= kMaxRegionNameBytes;
  for (char c : name) ok = ok && static_cast<unsigned char>(c) >= 0x20 && c != 0x7f;
  if (ok) return Status::ok();
  return jsonio::fieldError(
      path, "1.." + std::to_string(kMaxRegionNameBytes) + " bytes without control characters",
      jsonio::quoteForError(name) + " (" + std::to_string(name.size()) + " bytes)");
}

Status validateAgentName(std::string_view name, std::string_view path) {
  return validateToken(name, path, 1, kMaxAgentNameBytes);
}

Status validateApplicationInfo(std::string_view info, std::string_view path) {
  if (info.size() > kMaxApplicationInfoBytes) {
    return jsonio::fieldError(path,
                              "at most " + std::to_string(kMaxApplicationInfoBytes) + " bytes",
                              std::to_string(info.size()) + " bytes");
  }
  // It travels as a JSON string, which would alter bytes that are not UTF-8.
  if (jsonio::utf8Prefix(info, info.size()) != info) {
    return jsonio::fieldError(path, "valid UTF-8", "bytes that are not");
  }
  return Status::ok();
}

Status validateMetadata(const engine::PeerMetadata& metadata, std::string_view path) {
  const std::string root(path);
  KVX_RETURN_IF_ERROR(validateAgentName(metadata.name, root + ".name"));
  KVX_RETURN_IF_ERROR(
      validateToken(metadata.transport, root + ".transport", 0, kMaxTransportNameBytes));
  if (metadata.dataAddress.size() > kMaxDataAddressBytes) {
    return jsonio::fieldError(root + ".dataAddress",
                              "at most " + std::to_string(kMaxDataAddressBytes) + " bytes",
                              std::to_string(metadata.dataAddress.size()) + " bytes");
  }
  if (metadata.regions.size() > kMaxRegions) {
    return jsonio::fieldError(root + ".regions",
                              "at most " + std::to_string(kMaxRegions) + " regions",
                              std::to_string(metadata.regions.size()));
  }
  KVX_RETURN_IF_ERROR(validateApplicationInfo(metadata.applicationInfo, root + ".app"));
  std::unordered_map<std::uint64_t, std::size_t> ids;
  std::unordered_map<std::string_view, std::size_t> names;
  for (std::size_t i = 0; i < metadata.regions.size(); ++i) {
    const engine::RegionMetadata& region = metadata.regions[i];
    const std::string path_i = regionPath(root, i);
    KVX_RETURN_IF_ERROR(validateRegion(region, path_i));
    auto [idIt, idFresh] = ids.emplace(region.info.id.value, i);
    if (!idFresh) {
      return jsonio::fieldError(path_i + ".id", "a unique region id",
                                std::to_string(region.info.id.value) + ", also used by regions[" +
                                    std::to_string(idIt->second) + "]");
    }
    auto [nameIt, nameFresh] = names.emplace(region.info.name, i);
    if (!nameFresh) {
      return jsonio::fieldError(path_i + ".name", "a unique region name",
                                jsonio::quoteForError(region.info.name) +
                                    ", also used by regions[" + std::to_string(nameIt->second) +
                                    "]");
    }
  }
  return Status::ok();
}

json metadataToJson(const engine::PeerMetadata& metadata) {
  json regions = json::array();
  for (const engine::RegionMetadata& region : metadata.regions) {
    regions.push_back({{"id", region.info.id.value},
                       {"name", region.info.name},
                       {"address", region.info.address},
                       {"length", region.info.length},
                       {"kind", std::string(toString(region.info.kind))},
                       {"device", region.info.device},
                       {"exposed", region.info.exposed},
                       {"packedKey", jsonio::toHex(region.packedKey)}});
  }
  json out = {{"name", metadata.name},
              {"incarnation", metadata.incarnation},
              {"transport", metadata.transport},
              {"dataAddress", jsonio::toHex(metadata.dataAddress)},
              {"regions", std::move(regions)}};
  // Optional: older agents neither send nor expect it (their peers then refuse transfers
  // that would need it).
  const engine::StagingWindowMetadata& window = metadata.stagingWindow;
  if (window.present()) {
    out["stagingWindow"] = {{"address", window.address},
                            {"slotBytes", window.slotBytes},
                            {"slots", window.slots},
                            {"packedKey", jsonio::toHex(window.packedKey)}};
  }
  if (!metadata.applicationInfo.empty()) out["app"] = metadata.applicationInfo;
  return out;
}

Result<engine::PeerMetadata> metadataFromJson(const json& value, std::string_view path) {
  try {
    KVX_ASSIGN_OR_RETURN(jsonio::JsonReader reader,
                         jsonio::JsonReader::object(value, std::string(path)));
    engine::PeerMetadata metadata;
    KVX_ASSIGN_OR_RETURN(metadata.name, reader.string("name", kMaxAgentNameBytes));
    KVX_ASSIGN_OR_RETURN(metadata.incarnation, reader.unsignedInteger("incarnation"));
    KVX_ASSIGN_OR_RETURN(metadata.transport, reader.string("transport", kMaxTransportNameBytes));
    KVX_ASSIGN_OR_RETURN(metadata.dataAddress,
                         reader.hexBytes("dataAddress", kMaxDataAddressBytes));
    KVX_ASSIGN_OR_RETURN(const json* regions, reader.array("regions", kMaxRegions));
    metadata.regions.reserve(regions->size());
    for (std::size_t i = 0; i < regions->size(); ++i) {
      KVX_ASSIGN_OR_RETURN(engine::RegionMetadata region,
                           regionFromJson((*regions)[i], regionPath(path, i)));
      metadata.regions.push_back(std::move(region));
    }
    if (reader.value().contains("stagingWindow")) {
      KVX_ASSIGN_OR_RETURN(jsonio::JsonReader window, reader.child("stagingWindow"));
      engine::StagingWindowMetadata& out = metadata.stagingWindow;
      KVX_ASSIGN_OR_RETURN(out.address, window.unsignedInteger("address"));
      KVX_ASSIGN_OR_RETURN(out.slotBytes,
                           window.unsignedInteger("slotBytes", 1, kMaxWindowSlotBytes));
      KVX_ASSIGN_OR_RETURN(std::uint64_t slots,
                           window.unsignedInteger("slots", 1, kMaxWindowSlots));
      out.slots = static_cast<std::uint32_t>(slots);
      KVX_ASSIGN_OR_RETURN(out.packedKey, window.hexBytes("packedKey", kMaxPackedKeyBytes));
      if (out.address + out.slotBytes * out.slots < out.address) {
        return jsonio::fieldError(window.path(), "a window that does not wrap the address space",
                                  std::to_string(out.slots) + " x " +
                                      std::to_string(out.slotBytes) + " bytes at " +
                                      std::to_string(out.address));
      }
    }
    KVX_ASSIGN_OR_RETURN(std::optional<std::string> app,
                         reader.optionalString("app", kMaxApplicationInfoBytes));
    metadata.applicationInfo = app.value_or("");
    KVX_RETURN_IF_ERROR(validateMetadata(metadata, path));
    return metadata;
  } catch (const std::exception& e) {
    return protocolError(std::string(path) + ": unexpected JSON error: " + e.what());
  }
}

std::vector<std::uint8_t> encodeMetadataBlob(const engine::PeerMetadata& metadata) {
  return channel::encodeFrame(channel::MessageType::kMetadataBlob,
                              jsonio::dumpJson(metadataToJson(metadata)));
}

Result<engine::PeerMetadata> decodeMetadataBlob(std::span<const std::uint8_t> blob,
                                                std::uint32_t maxBytes) {
  channel::FrameDecoder decoder(maxBytes);
  KVX_RETURN_IF_ERROR(decoder.feed(blob).withContext("metadata blob"));
  std::optional<channel::Frame> frame = decoder.next();
  if (!frame) {
    return protocolError("metadata blob of " + std::to_string(blob.size()) +
                         " bytes is truncated: the frame is incomplete");
  }
  if (decoder.midFrame() || decoder.next()) {
    return protocolError("metadata blob has bytes after its frame");
  }
  if (frame->type != static_cast<std::uint16_t>(channel::MessageType::kMetadataBlob)) {
    return protocolError("not a metadata blob: frame type " + std::to_string(frame->type) +
                         " is not " +
                         std::to_string(static_cast<int>(channel::MessageType::kMetadataBlob)));
  }
  KVX_ASSIGN_OR_RETURN(json value, jsonio::parseJson(frame->payload, "metadata blob payload"));
  return metadataFromJson(value, "metadata");
}

}  // namespace kvx::agent::metadata
