#include "agent/channel/stream/tls_error.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>

#include "agent/channel/asio_status.h"

namespace kvx::agent::channel {
namespace {

constexpr const char* kBothOrNeither =
    "enable TLS on the control channel of both agents (kvx agent --tls-cert, --tls-key, "
    "--tls-ca) or of neither";
constexpr const char* kSameCa =
    "each agent's certificate must be signed by the CA in the other's TLS CA file (--tls-ca)";

bool isCertificateAlert(int alert) {
  switch (alert) {
    case SSL_AD_BAD_CERTIFICATE:
    case SSL_AD_UNSUPPORTED_CERTIFICATE:
    case SSL_AD_CERTIFICATE_REVOKED:
    case SSL_AD_CERTIFICATE_EXPIRED:
    case SSL_AD_CERTIFICATE_UNKNOWN:
    case SSL_AD_UNKNOWN_CA:
    case SSL_AD_ACCESS_DENIED:
    case SSL_AD_DECRYPT_ERROR:
    case SSL_AD_CERTIFICATE_REQUIRED: return true;
    default: return false;
  }
}

// Reasons OpenSSL gives when the bytes that arrived are not TLS records at all.
bool isNotTls(int reason) {
  return reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
         reason == SSL_R_HTTP_REQUEST || reason == SSL_R_UNKNOWN_PROTOCOL ||
         reason == SSL_R_UNEXPECTED_RECORD;
}

}  // namespace

Status tlsStatus(std::string_view what, const std::string& remote,
                 const boost::system::error_code& error, long verifyResult) {
  const std::string prefix = std::string(what) + ": ";
  if (error == boost::asio::ssl::error::stream_truncated || error == boost::asio::error::eof) {
    return peerFailed(prefix + "connection closed by " + remote +
                      " (if this happens during the handshake, it may not use TLS or may have "
                      "refused this agent's certificate)");
  }
  if (error.category() != boost::asio::error::get_ssl_category()) {
    return asioStatus(StatusCode::kPeerFailed, what, error);
  }
  const int reason = ERR_GET_REASON(static_cast<unsigned long>(error.value()));
  const std::string text = error.message();
  if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED) {
    const char* why = X509_verify_cert_error_string(verifyResult);
    return unauthenticated(prefix + "the certificate of " + remote + " is not trusted (" +
                           (why != nullptr ? why : text.c_str()) + "); " + kSameCa);
  }
  if (reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE) {
    return unauthenticated(prefix + remote +
                           " presented no TLS certificate, and this agent requires one (mutual "
                           "TLS); " +
                           kSameCa);
  }
  if (reason >= SSL_AD_REASON_OFFSET) {
    const int alert = reason - SSL_AD_REASON_OFFSET;
    if (isCertificateAlert(alert)) {
      return unauthenticated(prefix + remote + " rejected this agent's TLS certificate (" + text +
                             "); " + kSameCa);
    }
    if (alert == SSL_AD_PROTOCOL_VERSION) {
      return unauthenticated(prefix + remote + " has no TLS version in common with this agent (" +
                             text + "; TLS 1.2 is the minimum)");
    }
    return unauthenticated(prefix + remote + " ended the TLS session (" + text + ")");
  }
  if (isNotTls(reason)) {
    return unauthenticated(prefix + remote + " does not speak TLS (" + text + "); " +
                           kBothOrNeither);
  }
  if (reason == SSL_R_UNSUPPORTED_PROTOCOL) {
    return unauthenticated(prefix + remote + " has no TLS version in common with this agent (" +
                           text + "; TLS 1.2 is the minimum)");
  }
  return protocolError(prefix + "TLS error with " + remote + ": " + text);
}

}  // namespace kvx::agent::channel
