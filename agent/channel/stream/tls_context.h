#pragma once

// TlsConfig and the OpenSSL context built from it: the control channel's certificates and
// how peers are verified.
//
// Policy (the same for both ends of a connection):
//  - TLS 1.2 at least; 1.3 whenever both ends have it (OpenSSL's choice of the highest).
//  - Mutual authentication: each end presents certFile and requires the other's certificate
//    to chain to a certificate in caFile. A listener refuses a client without a certificate.
//  - No host name or IP check: agents address each other by IP literals, which certificates
//    rarely name, so a certificate proves only that its holder was issued one by the CA.
//    Use a CA that issues certificates to kvx agents only.
//  - The private key must not be encrypted (there is nobody to ask for a passphrase).
//
// Stateless; thread-safe. The context it returns is immutable once built and may be shared
// by every connection of a channel.

#include <memory>
#include <string>

#include "kvx/result.h"
#include "kvx/status.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace kvx::agent::channel {

struct TlsConfig {
  bool enabled = false;  // when false the files are not used
  std::string certFile;  // PEM: this agent's certificate, then any intermediate CAs
  std::string keyFile;   // PEM: its private key (unencrypted)
  std::string caFile;    // PEM: the CA certificate(s) a peer's certificate must chain to
};

// OK, or INVALID_ARGUMENT when `tls` is enabled without all three files. Reads no file.
Status validateTlsConfig(const TlsConfig& tls);

// The context for `tls`'s files. NOT_FOUND for a file that cannot be read (naming it and the
// system's reason), INVALID_ARGUMENT for one that is not what it should be (no PEM
// certificate, a key that does not match the certificate, an encrypted key), with OpenSSL's
// reason. A warning is logged when the key file is readable by group or others.
// REQUIRES: validateTlsConfig(tls) is OK and tls.enabled.
Result<std::shared_ptr<boost::asio::ssl::context>> makeTlsContext(const TlsConfig& tls);

}  // namespace kvx::agent::channel
