// kvx/kvx.h: agents, memory and peers.
#include <chrono>

#include "api/c/c_api_boundary.h"

using kvx::c_api::copyBytes;
using kvx::c_api::copyString;
using kvx::c_api::guarded;
using kvx::c_api::nullArgument;

namespace {

kvx::Result<kvx::AgentOptions> optionsFrom(const kvx_agent_config& config) {
  kvx::AgentOptions options;
  if (config.name == nullptr)
    return kvx::invalidArgument("kvx_agent_create: `config->name` is NULL");
  options.name = config.name;
  if (config.listen_address != nullptr) options.listenAddress = config.listen_address;
  if (config.data_path != nullptr && !kvx::selectDataPath(options, config.data_path)) {
    return kvx::invalidArgument(std::string("kvx_agent_create: unknown data path '") +
                                config.data_path + "' (shm, tcp or socket)");
  }
  if (config.net_devices != nullptr) options.ucxNetDevices = config.net_devices;
  if (config.auth_token != nullptr) options.authToken = config.auth_token;
  if (config.caller_progress != 0) options.progressMode = kvx::ProgressMode::kCaller;
  using std::chrono::milliseconds;
  if (config.connect_timeout_ms != 0)
    options.connectTimeout = milliseconds(config.connect_timeout_ms);
  if (config.peer_timeout_ms != 0) options.peerTimeout = milliseconds(config.peer_timeout_ms);
  if (config.heartbeat_interval_ms != 0) {
    options.heartbeatInterval = milliseconds(config.heartbeat_interval_ms);
  }
  return options;
}

}  // namespace

extern "C" {

void kvx_agent_config_init(kvx_agent_config* config) {
  if (config != nullptr) *config = kvx_agent_config{};
}

kvx_status kvx_agent_create(const kvx_agent_config* config, kvx_agent** agent) {
  if (config == nullptr) return nullArgument(__func__, "config");
  if (agent == nullptr) return nullArgument(__func__, "agent");
  *agent = nullptr;
  return guarded(__func__, [&]() -> kvx::Status {
    KVX_ASSIGN_OR_RETURN(kvx::AgentOptions options, optionsFrom(*config));
    KVX_ASSIGN_OR_RETURN(std::unique_ptr<kvx::Agent> made, kvx::Agent::create(std::move(options)));
    *agent = new kvx_agent{std::move(made)};
    return kvx::Status::ok();
  });
}

void kvx_agent_destroy(kvx_agent** agent) {
  if (agent == nullptr || *agent == nullptr) return;
  try {
    delete *agent;
  } catch (...) {
    // Nothing can be reported from here; the agent's destructor does not throw by contract.
  }
  *agent = nullptr;
}

kvx_status kvx_agent_listen_address(const kvx_agent* agent, char** address) {
  if (agent == nullptr) return nullArgument(__func__, "agent");
  if (address == nullptr) return nullArgument(__func__, "address");
  return guarded(__func__, [&] {
    *address = copyString(agent->agent->listenAddress());
    return kvx::Status::ok();
  });
}

kvx_status kvx_agent_progress(kvx_agent* agent, int* moved) {
  if (agent == nullptr) return nullArgument(__func__, "agent");
  return guarded(__func__, [&] {
    const bool any = agent->agent->progress();
    if (moved != nullptr) *moved = any ? 1 : 0;
    return kvx::Status::ok();
  });
}

kvx_status kvx_register_memory(kvx_agent* agent, const char* name, void* address, uint64_t length,
                               kvx_memory_kind kind, int device, int exposed,
                               kvx_region_id* region) {
  if (agent == nullptr) return nullArgument(__func__, "agent");
  if (name == nullptr) return nullArgument(__func__, "name");
  if (region == nullptr) return nullArgument(__func__, "region");
  const int rawKind = kvx::c_api::rawValue(kind);
  if (rawKind != KVX_MEMORY_HOST && rawKind != KVX_MEMORY_CUDA) {
    return kvx::c_api::report(
        kvx::invalidArgument(std::string(__func__) + ": memory kind " + std::to_string(rawKind) +
                             " is neither KVX_MEMORY_HOST nor KVX_MEMORY_CUDA"));
  }
  return guarded(__func__, [&]() -> kvx::Status {
    kvx::MemoryRegionSpec spec;
    spec.name = name;
    spec.address = address;
    spec.length = length;
    spec.kind = rawKind == KVX_MEMORY_CUDA ? kvx::MemoryKind::kCuda : kvx::MemoryKind::kHost;
    spec.device = device;
    spec.exposed = exposed != 0;
    KVX_ASSIGN_OR_RETURN(kvx::RegionId id, agent->agent->registerMemory(spec));
    *region = id.value;
    return kvx::Status::ok();
  });
}

kvx_status kvx_deregister_memory(kvx_agent* agent, kvx_region_id region) {
  if (agent == nullptr) return nullArgument(__func__, "agent");
  return guarded(__func__, [&] { return agent->agent->deregisterMemory(kvx::RegionId(region)); });
}

kvx_status kvx_export_metadata(const kvx_agent* agent, uint8_t** blob, size_t* length) {
  if (agent == nullptr) return nullArgument(__func__, "agent");
  if (blob == nullptr) return nullArgument(__func__, "blob");
  if (length == nullptr) return nullArgument(__func__, "length");
  return guarded(__func__, [&]() -> kvx::Status {
    KVX_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, agent->agent->exportMetadata());
    *blob = copyBytes(bytes);
    *length = bytes.size();
    return kvx::Status::ok();
  });
}

kvx_status kvx_load_peer_metadata(kvx_agent* agent, const uint8_t* blob, size_t length,
                                  char** peer) {
  if (agent == nullptr) return nullArgument(__func__, "agent");
  if (blob == nullptr && length != 0) return nullArgument(__func__, "blob");
  return guarded(__func__, [&]() -> kvx::Status {
    KVX_ASSIGN_OR_RETURN(std::string name, agent->agent->loadPeerMetadata(
                                               std::span<const std::uint8_t>(blob, length)));
    if (peer != nullptr) *peer = copyString(name);
    return kvx::Status::ok();
  });
}

kvx_status kvx_connect(kvx_agent* agent, const char* address, uint32_t timeout_ms, char** peer) {
  if (agent == nullptr) return nullArgument(__func__, "agent");
  if (address == nullptr) return nullArgument(__func__, "address");
  return guarded(__func__, [&]() -> kvx::Status {
    kvx::Result<std::string> name =
        timeout_ms == 0 ? agent->agent->connect(address)
                        : agent->agent->connect(
                              address, kvx::deadlineIn(std::chrono::milliseconds(timeout_ms)));
    KVX_RETURN_IF_ERROR(name.status());
    if (peer != nullptr) *peer = copyString(*name);
    return kvx::Status::ok();
  });
}

kvx_status kvx_disconnect(kvx_agent* agent, const char* peer) {
  if (agent == nullptr) return nullArgument(__func__, "agent");
  if (peer == nullptr) return nullArgument(__func__, "peer");
  return guarded(__func__, [&] { return agent->agent->disconnect(peer); });
}

kvx_status kvx_peer_region(const kvx_agent* agent, const char* peer, const char* name,
                           kvx_region_id* region) {
  if (agent == nullptr) return nullArgument(__func__, "agent");
  if (peer == nullptr) return nullArgument(__func__, "peer");
  if (name == nullptr) return nullArgument(__func__, "name");
  if (region == nullptr) return nullArgument(__func__, "region");
  return guarded(__func__, [&]() -> kvx::Status {
    KVX_ASSIGN_OR_RETURN(kvx::PeerInfo info, agent->agent->peerInfo(peer));
    for (const kvx::RegionInfo& r : info.regions) {
      if (r.name == name) {
        *region = r.id.value;
        return kvx::Status::ok();
      }
    }
    return kvx::notFound(std::string("peer '") + peer + "' exposes no region named '" + name + "'");
  });
}

}  // extern "C"
