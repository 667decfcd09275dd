#pragma once

// EtcdClient: the calls kvx's registry makes on etcd v3, through its JSON gateway
// (etcd_http.h): leases (grant, keep alive, revoke), a put under a lease and a listing of a
// prefix. Each call tries the target's endpoints in turn, starting with the one that
// answered last, until one answers or the deadline passes; with credentials it
// authenticates first (/v3/auth/authenticate) and again once where a token was refused.
// Keys and values are bytes (base64 on the wire, as the gateway wants them).
// Threads: any thread may call any member.

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvx/result.h"
#include "kvx/transfer.h"
#include "registry/etcd_target.h"
#include "sync/mutex.h"

namespace kvx::registry {

struct EtcdEntry {
  std::string key;
  std::string value;
  std::int64_t modRevision = 0;
};

struct EtcdListing {
  std::int64_t revision = 0;  // the store's revision the listing is of
  std::vector<EtcdEntry> entries;
};

class EtcdClient {
 public:
  explicit EtcdClient(EtcdTarget target);

  const EtcdTarget& target() const { return target_; }

  // A lease of `ttl` (etcd may round it up); its id.
  Result<std::int64_t> grantLease(std::chrono::seconds ttl, Deadline deadline);
  // Renews the lease; NOT_FOUND once it has expired (its keys are gone).
  Status keepAlive(std::int64_t lease, Deadline deadline);
  Status revoke(std::int64_t lease, Deadline deadline);
  Status put(const std::string& key, const std::string& value, std::int64_t lease,
             Deadline deadline);
  Result<EtcdListing> list(const std::string& prefix, Deadline deadline);

  // One gateway call (`path` and its JSON body) on the first endpoint that answers; for the
  // watch, which streams, the endpoint to use and the auth token (empty without credentials).
  Result<nlohmann::json> call(const std::string& path, const nlohmann::json& body,
                              Deadline deadline);
  Result<std::pair<EtcdEndpoint, std::string>> streamTarget(Deadline deadline);

 private:
  Status authenticateLocked(const EtcdEndpoint& endpoint, Deadline deadline) KVX_REQUIRES(mutex_);

  const EtcdTarget target_;
  sync::Mutex mutex_;
  std::size_t preferred_ KVX_GUARDED_BY(mutex_) = 0;  // the endpoint that answered last
  std::string token_ KVX_GUARDED_BY(mutex_);
};

// Base64 (RFC 4648, padded), as the JSON gateway carries bytes; decoding returns
// INVALID_ARGUMENT for text that is not base64.
std::string toBase64(const std::string& bytes);
Result<std::string> fromBase64(const std::string& text);
// The range end of every key starting with `prefix` (the prefix with its last byte + 1).
std::string prefixEnd(std::string prefix);
// An int64 the gateway writes as a JSON string ("123") or number; 0 when absent.
Result<std::int64_t> jsonInt(const nlohmann::json& object, const char* name);

}  // namespace kvx::registry
