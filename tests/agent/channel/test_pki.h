#pragma once

// TestPki: a throwaway public-key infrastructure for the TLS tests. Certificate authorities
// and the certificates they sign are made at run time with OpenSSL's C API (EC P-256 keys,
// SHA-256 signatures, valid from an hour ago for a day) and written as PEM files into a
// fresh temporary directory, removed with the object. Single-threaded test use only.

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

namespace kvx::test {

// The three files an agent's TLS options name.
struct TlsFileSet {
  std::string cert;
  std::string key;
  std::string ca;
};

class TestPki {
 public:
  TestPki() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kvx-tls-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    dir_ = pattern;
  }
  ~TestPki() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  const std::filesystem::path& dir() const { return dir_; }

  // Makes a self-signed CA named `name`; its certificate is written to <dir>/<name>.pem.
  void makeCa(const std::string& name) {
    Ca ca;
    ca.key = newKey();
    ca.cert = newCert(name, ca.key.get(), nullptr, nullptr, /*isCa=*/true);
    ca.file = writeCert(name, ca.cert.get());
    cas_.emplace(name, std::move(ca));
  }

  // Issues a certificate for `name` signed by CA `caName`, and returns its files with
  // `trustCa`'s certificate as the CA file (by default the issuer's).
  TlsFileSet issue(const std::string& name, const std::string& caName,
                   const std::string& trustCa = "") {
    const Ca& issuer = cas_.at(caName);
    Key key = newKey();
    Cert cert = newCert(name, key.get(), issuer.cert.get(), issuer.key.get(), /*isCa=*/false);
    TlsFileSet files;
    files.cert = writeCert(name, cert.get());
    files.key = writeKey(name, key.get());
    files.ca = cas_.at(trustCa.empty() ? caName : trustCa).file;
    return files;
  }

  // Writes `text` to <dir>/<name> and returns the path.
  std::string writeText(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::FILE* file = std::fopen(path.c_str(), "w");
    REQUIRE(file != nullptr);
    std::fputs(text.c_str(), file);
    std::fclose(file);
    return path;
  }

 private:
  struct KeyFree {
    void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
  };
  struct CertFree {
    void operator()(X509* cert) const { X509_free(cert); }
  };
  using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
  using Cert = std::unique_ptr<X509, CertFree>;
  struct Ca {
    Key key;
    Cert cert;
    std::string file;
  };

  static Key newKey() {
    Key key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
    REQUIRE(key != nullptr);
    return key;
  }

  static void addExtension(X509* cert, X509* issuer, int nid, const char* value) {
    X509V3_CTX context;
    X509V3_set_ctx_nodb(&context);
    X509V3_set_ctx(&context, issuer != nullptr ? issuer : cert, cert, nullptr, nullptr, 0);
    X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value);
    REQUIRE(extension != nullptr);
    REQUIRE(X509_add_ext(cert, extension, -1) == 1);
    X509_EXTENSION_free(extension);
  }

  // A certificate for `name` holding `key`'s public half, signed by `issuerKey` (or by `key`
  // itself when `issuer` is null).
  Cert newCert(const std::string& name, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuerKey,
               bool isCa) {
    Cert cert(X509_new());
    REQUIRE(cert != nullptr);
    X509_set_version(cert.get(), 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), nextSerial_++);
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
    REQUIRE(X509_set_pubkey(cert.get(), key) == 1);
    X509_NAME* subject = X509_get_subject_name(cert.get());
    X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0);
    X509_set_issuer_name(cert.get(), issuer != nullptr ? X509_get_subject_name(issuer) : subject);
    if (isCa) {
      addExtension(cert.get(), issuer, NID_basic_constraints, "critical,CA:TRUE");
      addExtension(cert.get(), issuer, NID_key_usage, "critical,keyCertSign,cRLSign");
    } else {
      addExtension(cert.get(), issuer, NID_basic_constraints, "critical,CA:FALSE");
      addExtension(cert.get(), issuer, NID_key_usage, "critical,digitalSignature");
      // An agent is the server of the connections it accepts and the client of the others.
      addExtension(cert.get(), issuer, NID_ext_key_usage, "serverAuth,clientAuth");
    }
    REQUIRE(X509_sign(cert.get(), issuerKey != nullptr ? issuerKey : key, EVP_sha256()) > 0);
    return cert;
  }

  std::string writeCert(const std::string& name, X509* cert) {
    const std::string path = (dir_ / (name + ".pem")).string();
    std::FILE* file = std::fopen(path.c_str(), "w");
    REQUIRE(file != nullptr);
    REQUIRE(PEM_write_X509(file, cert) == 1);
    std::fclose(file);
    return path;
  }

  std::string writeKey(const std::string& name, EVP_PKEY* key) {
    const std::string path = (dir_ / (name + ".key")).string();
    std::FILE* file = std::fopen(path.c_str(), "w");
    REQUIRE(file != nullptr);
    REQUIRE(PEM_write_PrivateKey(file, key, nullptr, nullptr, 0, nullptr, nullptr) == 1);
    std::fclose(file);
    std::filesystem::permissions(
        path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    return path;
  }

  std::filesystem::path dir_;
  std::map<std::string, Ca> cas_;
  long nextSerial_ = 1;
};

}  // namespace kvx::test
