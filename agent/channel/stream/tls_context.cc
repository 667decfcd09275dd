#include "agent/channel/stream/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>

#include <boost/asio/ssl/context.hpp>
#include <cerrno>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string_view>
#include <system_error>

namespace kvx::agent::channel {
namespace {

namespace ssl = boost::asio::ssl;

struct FileRole {
  std::string_view what;    // "TLS certificate file"
  std::string_view option;  // "tls.certFile; kvx agent --tls-cert"
};

constexpr FileRole kCert{"TLS certificate file", "tls.certFile; kvx agent --tls-cert"};
constexpr FileRole kKey{"TLS private key file", "tls.keyFile; kvx agent --tls-key"};
constexpr FileRole kCa{"TLS CA file", "tls.caFile; kvx agent --tls-ca"};

std::string named(const FileRole& role, const std::string& path) {
  return std::string(role.what) + " '" + path + "' (" + std::string(role.option) + ")";
}

// Readability first, so that a missing file is reported as such rather than as whatever
// OpenSSL makes of it.
Status checkReadable(const FileRole& role, const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return notFound(named(role, path) + " is a directory; name a PEM file");
  }
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return notFound(named(role, path) + " cannot be read: " +
                    std::error_code(errno, std::generic_category()).message());
  }
  std::fclose(file);
  return Status::ok();
}

Status badContent(const FileRole& role, const std::string& path, std::string_view expected,
                  const boost::system::error_code& error) {
  return invalidArgument(named(role, path) + " does not hold " + std::string(expected) + ": " +
                         error.message());
}

void warnIfShared(const std::string& keyFile) {
  std::error_code error;
  const std::filesystem::perms mode = std::filesystem::status(keyFile, error).permissions();
  using std::filesystem::perms;
  if (!error && (mode & (perms::group_read | perms::others_read)) != perms::none) {
    spdlog::warn("TLS private key file '{}' is readable by other users; chmod 600 it", keyFile);
  }
}

}  // namespace

Status validateTlsConfig(const TlsConfig& tls) {
  if (!tls.enabled) return Status::ok();
  if (tls.certFile.empty() || tls.keyFile.empty() || tls.caFile.empty()) {
    return invalidArgument(
        std::string("TLS on the control channel needs all three files: a certificate (") +
        (tls.certFile.empty() ? "missing" : "set") + "), its private key (" +
        (tls.keyFile.empty() ? "missing" : "set") +
        ") and the CA that signs peers' certificates (" + (tls.caFile.empty() ? "missing" : "set") +
        "); kvx agent takes them as --tls-cert, --tls-key and --tls-ca");
  }
  return Status::ok();
}

Result<std::shared_ptr<ssl::context>> makeTlsContext(const TlsConfig& tls) {
  KVX_RETURN_IF_ERROR(checkReadable(kCert, tls.certFile));
  KVX_RETURN_IF_ERROR(checkReadable(kKey, tls.keyFile));
  KVX_RETURN_IF_ERROR(checkReadable(kCa, tls.caFile));
  std::shared_ptr<ssl::context> context;
  try {
    context = std::make_shared<ssl::context>(ssl::context::tls);
  } catch (const std::exception& e) {
    return internalError(std::string("cannot create an OpenSSL context: ") + e.what());
  }
  SSL_CTX* native = context->native_handle();
  if (SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION) != 1) {
    return internalError("OpenSSL refused TLS 1.2 as the minimum protocol version");
  }
  context->set_options(ssl::context::default_workarounds | ssl::context::no_compression |
                       SSL_OP_NO_RENEGOTIATION);
  boost::system::error_code error;
  // A passphrase prompt would block the agent on its terminal: an encrypted key fails instead.
  context->set_password_callback(
      [](std::size_t, ssl::context::password_purpose) { return std::string(); }, error);
  context->use_certificate_chain_file(tls.certFile, error);
  if (error) return badContent(kCert, tls.certFile, "a PEM certificate", error);
  context->use_private_key_file(tls.keyFile, ssl::context::pem, error);
  const auto code = static_cast<unsigned long>(error.value());
  const bool mismatch = error && ERR_GET_LIB(code) == ERR_LIB_X509 &&
                        ERR_GET_REASON(code) == X509_R_KEY_VALUES_MISMATCH;
  if (error && !mismatch) {
    return badContent(kKey, tls.keyFile, "an unencrypted PEM private key", error);
  }
  if (mismatch || SSL_CTX_check_private_key(native) != 1) {
    ERR_clear_error();
    return invalidArgument(named(kKey, tls.keyFile) + " is not the key of the certificate in " +
                           named(kCert, tls.certFile));
  }
  context->load_verify_file(tls.caFile, error);
  if (error) return badContent(kCa, tls.caFile, "PEM CA certificates", error);
  // verify_peer makes a client check the server's chain and a server ask for the client's;
  // fail_if_no_peer_cert makes that request a requirement. No host name is set to check.
  context->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  warnIfShared(tls.keyFile);
  return context;
}

}  // namespace kvx::agent::channel
