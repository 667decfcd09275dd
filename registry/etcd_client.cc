#include "registry/etcd_client.h"

#include <openssl/evp.h>

#include <charconv>

#include "registry/etcd_http.h"

namespace kvx::registry {

std::string toBase64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                      reinterpret_cast<const unsigned char*>(bytes.data()),
                                      static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(written));
  return out;
}

Result<std::string> fromBase64(const std::string& text) {
  if (text.size() % 4 != 0) return invalidArgument("base64 text of a length not a multiple of 4");
  std::string out(3 * text.size() / 4, '\0');
  const int written = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                      reinterpret_cast<const unsigned char*>(text.data()),
                                      static_cast<int>(text.size()));
  if (written < 0) return invalidArgument("text that is not base64");
  std::size_t padding = 0;
  for (std::size_t i = text.size(); i > 0 && text[i - 1] == '=' && padding < 2; --i) ++padding;
  out.resize(static_cast<std::size_t>(written) - padding);
  return out;
}

std::string prefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(prefix.back());
    if (last < 0xff) {
      ++last;
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');  // every key
}

Result<std::int64_t> jsonInt(const nlohmann::json& object, const char* name) {
  if (!object.is_object() || !object.contains(name)) return std::int64_t{0};
  const nlohmann::json& value = object[name];
  if (value.is_number_integer()) return value.get<std::int64_t>();
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    std::int64_t parsed = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (error == std::errc() && end == text.data() + text.size()) return parsed;
  }
  return internalError(std::string("etcd answered a '") + name +
                       "' that is not an integer: " + value.dump().substr(0, 100));
}

EtcdClient::EtcdClient(EtcdTarget target) : target_(std::move(target)) {}

Status EtcdClient::authenticateLocked(const EtcdEndpoint& endpoint, Deadline deadline) {
  KVX_ASSIGN_OR_RETURN(
      nlohmann::json answer,
      postJson(endpoint, "/v3/auth/authenticate",
               {{"name", target_.user}, {"password", target_.password}}, "", deadline));
  if (!answer.contains("token") || !answer["token"].is_string()) {
    return unauthenticated("etcd gave user '" + target_.user + "' no token");
  }
  token_ = answer["token"].get<std::string>();
  return Status::ok();
}

Result<nlohmann::json> EtcdClient::call(const std::string& path, const nlohmann::json& body,
                                        Deadline deadline) {
  sync::MutexLock lock(mutex_);
  Status last = peerFailed("no endpoint tried");
  for (std::size_t tried = 0; tried < target_.endpoints.size(); ++tried) {
    const std::size_t index = (preferred_ + tried) % target_.endpoints.size();
    const EtcdEndpoint& endpoint = target_.endpoints[index];
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (!target_.user.empty() && token_.empty()) {
        last = authenticateLocked(endpoint, deadline);
        if (!last.isOk()) break;
      }
      auto answer = postJson(endpoint, path, body, token_, deadline);
      if (answer.isOk()) {
        preferred_ = index;
        return answer;
      }
      last = answer.status();
      // A refused token (expired, or etcd restarted): authenticate once more.
      if (last.code() != StatusCode::kUnauthenticated || target_.user.empty()) break;
      token_.clear();
    }
    // Errors of the request itself would be the same on every endpoint.
    if (last.code() != StatusCode::kPeerFailed && last.code() != StatusCode::kTimedOut) break;
    if (Clock::now() >= deadline) break;
  }
  return last;
}

Result<std::pair<EtcdEndpoint, std::string>> EtcdClient::streamTarget(Deadline deadline) {
  // A cheap call finds an endpoint that answers (and a token, with credentials).
  KVX_RETURN_IF_ERROR(call("/v3/maintenance/status", nlohmann::json::object(), deadline).status());
  sync::MutexLock lock(mutex_);
  return std::make_pair(target_.endpoints[preferred_], token_);
}

Result<std::int64_t> EtcdClient::grantLease(std::chrono::seconds ttl, Deadline deadline) {
  KVX_ASSIGN_OR_RETURN(nlohmann::json answer,
                       call("/v3/lease/grant", {{"TTL", ttl.count()}}, deadline));
  KVX_ASSIGN_OR_RETURN(std::int64_t id, jsonInt(answer, "ID"));
  if (id == 0) return internalError("etcd granted no lease: " + answer.dump().substr(0, 200));
  return id;
}

Status EtcdClient::keepAlive(std::int64_t lease, Deadline deadline) {
  KVX_ASSIGN_OR_RETURN(nlohmann::json answer,
                       call("/v3/lease/keepalive", {{"ID", std::to_string(lease)}}, deadline));
  KVX_ASSIGN_OR_RETURN(std::int64_t ttl, jsonInt(answer, "TTL"));
  if (ttl <= 0) return notFound("etcd lease " + std::to_string(lease) + " has expired");
  return Status::ok();
}

Status EtcdClient::revoke(std::int64_t lease, Deadline deadline) {
  return call("/v3/lease/revoke", {{"ID", std::to_string(lease)}}, deadline).status();
}

Status EtcdClient::put(const std::string& key, const std::string& value, std::int64_t lease,
                       Deadline deadline) {
  nlohmann::json body = {{"key", toBase64(key)}, {"value", toBase64(value)}};
  if (lease != 0) body["lease"] = std::to_string(lease);
  return call("/v3/kv/put", body, deadline).status();
}

Result<EtcdListing> EtcdClient::list(const std::string& prefix, Deadline deadline) {
  KVX_ASSIGN_OR_RETURN(
      nlohmann::json answer,
      call("/v3/kv/range", {{"key", toBase64(prefix)}, {"range_end", toBase64(prefixEnd(prefix))}},
           deadline));
  EtcdListing listing;
  KVX_ASSIGN_OR_RETURN(listing.revision,
                       jsonInt(answer.value("header", nlohmann::json::object()), "revision"));
  for (const nlohmann::json& kv : answer.value("kvs", nlohmann::json::array())) {
    EtcdEntry entry;
    auto key = fromBase64(kv.value("key", ""));
    auto value = fromBase64(kv.value("value", ""));
    if (!key.isOk() || !value.isOk()) continue;  // not a gateway answer: nothing to use
    entry.key = std::move(key).value();
    entry.value = std::move(value).value();
    entry.modRevision = jsonInt(kv, "mod_revision").valueOr(0);
    listing.entries.push_back(std::move(entry));
  }
  return listing;
}

}  // namespace kvx::registry
