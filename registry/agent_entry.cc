#include "registry/agent_entry.h"

#include <nlohmann/json.hpp>

namespace kvx::registry {
namespace {

constexpr std::size_t kMaxValueBytes = 64u << 10;
constexpr std::size_t kMaxText = 256;
constexpr int kFormat = 1;

Result<std::string> text(const nlohmann::json& j, const char* field, bool required = true) {
  if (!j.contains(field)) {
    if (required) return invalidArgument(std::string("no '") + field + "'");
    return std::string();
  }
  if (!j[field].is_string()) return invalidArgument(std::string("'") + field + "' is no string");
  std::string value = j[field].get<std::string>();
  if (value.size() > kMaxText) {
    return invalidArgument(std::string("'") + field + "' is above 256 characters");
  }
  return value;
}

Result<std::uint64_t> number(const nlohmann::json& j, const char* field) {
  if (!j.contains(field) || !j[field].is_number_unsigned()) {
    return invalidArgument(std::string("'") + field + "' is no unsigned number");
  }
  return j[field].get<std::uint64_t>();
}

Result<AgentEntry> parse(const std::string& name, const std::string& value) {
  const nlohmann::json j = nlohmann::json::parse(value, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return invalidArgument("not JSON, or truncated");
  if (!j.contains("kvx") || j["kvx"] != kFormat) {
    return invalidArgument("not a kvx agent entry (no \"kvx\": 1)");
  }
  AgentEntry entry;
  KVX_ASSIGN_OR_RETURN(entry.name, text(j, "name"));
  if (entry.name != name) {
    return invalidArgument("it claims the name '" + entry.name + "' under another's key");
  }
  KVX_ASSIGN_OR_RETURN(entry.role, text(j, "role"));
  if (entry.role != "prefill" && entry.role != "decode") {
    return invalidArgument("role '" + entry.role + "' is neither prefill nor decode");
  }
  KVX_ASSIGN_OR_RETURN(entry.incarnation, number(j, "incarnation"));
  KVX_ASSIGN_OR_RETURN(entry.control, text(j, "control"));
  if (entry.control.empty() || entry.control.rfind(':') == std::string::npos) {
    return invalidArgument("control address '" + entry.control + "' is not host:port");
  }
  KVX_ASSIGN_OR_RETURN(entry.model, text(j, "model", false));
  KVX_ASSIGN_OR_RETURN(entry.blocks, number(j, "blocks"));
  if (entry.blocks > (1ull << 40)) return invalidArgument("an absurd pool of blocks");
  KVX_ASSIGN_OR_RETURN(entry.memory, text(j, "memory", false));
  KVX_ASSIGN_OR_RETURN(entry.transport, text(j, "transport", false));
  KVX_ASSIGN_OR_RETURN(entry.devices, text(j, "devices", false));
  return entry;
}

}  // namespace

std::string AgentEntry::toJson() const {
  return nlohmann::json{{"kvx", kFormat},         {"name", name},
                        {"role", role},           {"incarnation", incarnation},
                        {"control", control},     {"model", model},
                        {"blocks", blocks},       {"memory", memory},
                        {"transport", transport}, {"devices", devices}}
      .dump();
}

Result<AgentEntry> parseAgentEntry(const std::string& prefix, const std::string& key,
                                   const std::string& value) {
  const auto refused = [&](const Status& why) {
    return invalidArgument("registry entry '" + key.substr(0, 300) +
                           "': " + std::string(why.message()));
  };
  if (key.size() <= prefix.size() || key.compare(0, prefix.size(), prefix) != 0) {
    return refused(invalidArgument("not under " + prefix));
  }
  if (value.size() > kMaxValueBytes) return refused(invalidArgument("above 64 KiB"));
  auto entry = parse(key.substr(prefix.size()), value);
  if (!entry.isOk()) return refused(entry.status());
  return entry;
}

}  // namespace kvx::registry
