#pragma once

// One HTTP/1.1 POST of a JSON body to etcd's v3 JSON gateway (/v3/kv/put, /v3/lease/grant,
// ...) and its JSON answer, bounded by a deadline: connect, write and read all end by it.
// A non-2xx answer is an error naming the path, the status and etcd's message. Stateless and
// thread-safe (a connection per call: registry calls are few, seconds apart).

#include <boost/beast/core/tcp_stream.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "kvx/result.h"
#include "kvx/transfer.h"
#include "registry/etcd_target.h"

namespace kvx::registry {

// PEER_FAILED where the endpoint cannot be reached, TIMED_OUT where it answers nothing by
// `deadline`; INTERNAL for an answer that is not JSON; the gateway's own error otherwise
// (NOT_FOUND for an unknown lease, UNAUTHENTICATED for refused credentials, ...).
// `token`: an auth token (Authorization header), empty for none. Answers above 16 MiB are
// refused.
Result<nlohmann::json> postJson(const EtcdEndpoint& endpoint, const std::string& path,
                                const nlohmann::json& body, const std::string& token,
                                Deadline deadline);

// Connects `stream` (its expiry already set) to `endpoint` and sends the POST of `body` to
// `path`: what postJson and the watch's stream both start with. PEER_FAILED naming `where`.
Status connectAndPost(boost::beast::tcp_stream& stream, const EtcdEndpoint& endpoint,
                      const std::string& path, const nlohmann::json& body, const std::string& token,
                      const std::string& where);

}  // namespace kvx::registry
