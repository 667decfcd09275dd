#include "kv/handoff/kv_agent_info.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "json/json_reader.h"
#include "kv/pool/model_shape.h"

namespace kvx::kv::handoff {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxRegionNameBytes = 256;
constexpr std::size_t kMaxTensors = 1 << 16;
constexpr std::uint64_t kMaxPid = 1ull << 31;
constexpr std::size_t kMaxHostKeyBytes = 256;

Result<KvAgentInfo> readInfo(const jsonio::JsonReader& r) {
  KvAgentInfo info;
  KVX_RETURN_IF_ERROR(r.unsignedInteger("version", kKvAgentInfoVersion, kKvAgentInfoVersion)
                          .status()
                          .withContext("a KV agent of another protocol version"));
  KVX_ASSIGN_OR_RETURN(std::string role, r.string("role", 16));
  auto parsedRole = parseKvRole(role);
  if (!parsedRole) return jsonio::fieldError(r.fieldPath("role"), "prefill or decode", role);
  info.role = *parsedRole;
  KVX_ASSIGN_OR_RETURN(std::string mode, r.string("mode", 16));
  auto parsedMode = parseKvMode(mode);
  if (!parsedMode) return jsonio::fieldError(r.fieldPath("mode"), "push or pull", mode);
  info.mode = *parsedMode;
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader shape, r.child("shape"));
  auto parsedShape = shapeFromJson(shape.value().dump());
  if (!parsedShape.isOk()) {
    return protocolError(shape.path() + ": " + parsedShape.status().message());
  }
  info.shape = std::move(parsedShape).value();
  KVX_ASSIGN_OR_RETURN(std::string layout, r.string("layout", 32));
  auto parsedLayout = parseLayout(layout);
  if (!parsedLayout.isOk()) {
    return protocolError(r.fieldPath("layout") + ": " + parsedLayout.status().message());
  }
  info.layout = *parsedLayout;
  KVX_ASSIGN_OR_RETURN(info.blocks, r.unsignedInteger("blocks", 1));
  KVX_ASSIGN_OR_RETURN(const json* regions, r.array("regions", kMaxTensors));
  for (std::size_t i = 0; i < regions->size(); ++i) {
    const json& name = (*regions)[i];
    if (!name.is_string() || name.get<std::string>().empty() ||
        name.get<std::string>().size() > kMaxRegionNameBytes) {
      return jsonio::fieldError(r.fieldPath("regions") + "[" + std::to_string(i) + "]",
                                "a region name", jsonio::jsonTypeName(name));
    }
    info.regionNames.push_back(name.get<std::string>());
  }
  if (r.value().contains("process")) {
    KVX_ASSIGN_OR_RETURN(jsonio::JsonReader process, r.child("process"));
    KVX_ASSIGN_OR_RETURN(info.process.pid, process.unsignedInteger("pid", 1, kMaxPid));
    KVX_ASSIGN_OR_RETURN(info.process.host, process.string("host", kMaxHostKeyBytes));
  }
  return info;
}

}  // namespace

std::string encodeKvAgentInfo(const KvAgentInfo& info) {
  json kv = {{"version", kKvAgentInfoVersion},
             {"role", std::string(toString(info.role))},
             {"mode", std::string(toString(info.mode))},
             {"shape", json::parse(shapeToJson(info.shape))},
             {"layout", std::string(toString(info.layout))},
             {"blocks", info.blocks},
             {"regions", info.regionNames}};
  if (info.process.known()) {
    kv["process"] = {{"pid", info.process.pid}, {"host", info.process.host}};
  }
  return jsonio::dumpJson(json{{"kv", kv}});
}

Result<KvAgentInfo> decodeKvAgentInfo(std::string_view text) {
  if (text.empty()) return notFound("its metadata carries no application description");
  try {
    KVX_ASSIGN_OR_RETURN(json value, jsonio::parseJson(text, "application description"));
    KVX_ASSIGN_OR_RETURN(jsonio::JsonReader root,
                         jsonio::JsonReader::object(value, "application description"));
    if (!root.value().contains("kv")) {
      return notFound("its application description has no KV part");
    }
    KVX_ASSIGN_OR_RETURN(jsonio::JsonReader kv, root.child("kv"));
    return readInfo(kv);
  } catch (const std::exception& e) {
    return protocolError(std::string("application description: unexpected JSON error: ") +
                         e.what());
  }
}

Result<PoolDescription> resolvePool(const KvAgentInfo& info, const PeerInfo& peer) {
  PoolDescription pool;
  pool.shape = info.shape;
  pool.layout = info.layout;
  pool.blocks = info.blocks;
  for (const std::string& name : info.regionNames) {
    const auto found = std::find_if(peer.regions.begin(), peer.regions.end(),
                                    [&](const RegionInfo& region) { return region.name == name; });
    if (found == peer.regions.end()) {
      return failedPrecondition("'" + peer.name + "' does not expose the region '" + name +
                                "' its KV pool names (is it still starting?)");
    }
    pool.tensorRegions.push_back(found->id);
  }
  const Status valid = validateDescription(pool);
  if (!valid.isOk()) return protocolError("the KV pool of '" + peer.name + "': " + valid.message());
  return pool;
}

}  // namespace kvx::kv::handoff
