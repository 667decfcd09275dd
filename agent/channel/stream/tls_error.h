#pragma once

// The one place where a TLS failure (an OpenSSL error and the peer-certificate verification
// result) becomes a Status, keeping OpenSSL's text and saying what to fix. Stateless.

#include <boost/system/error_code.hpp>
#include <string>
#include <string_view>

#include "kvx/status.h"

namespace kvx::agent::channel {

// `what`: the operation ("TLS handshake with 10.0.0.2:7001", "read from 10.0.0.2:7001");
// `remote`: the peer's address; `verifyResult`: SSL_get_verify_result of the connection
// (X509_V_OK when there was nothing to verify). UNAUTHENTICATED when credentials or
// protocols do not match (untrusted certificate, none presented, ours rejected, a peer that
// does not speak TLS); PEER_FAILED when the connection broke; PROTOCOL_ERROR otherwise.
Status tlsStatus(std::string_view what, const std::string& remote,
                 const boost::system::error_code& error, long verifyResult);

}  // namespace kvx::agent::channel
