#include "crypto/aes_gcm.h"

#include <openssl/evp.h>

#include <algorithm>

namespace kvx::crypto {

struct AesGcm::Context {
  EVP_CIPHER_CTX* cipher = nullptr;
  bool failed = false;  // an OpenSSL call failed in this message: it fails its tag
  ~Context() { EVP_CIPHER_CTX_free(cipher); }
};

namespace {

constexpr int kNonceBytes = 12;
// One EVP update takes an int length; longer spans go in steps.
constexpr std::size_t kMaxStepBytes = 1u << 30;

}  // namespace

Result<AesGcm> AesGcm::create(const Key256& key) {
  auto context = std::make_unique<Context>();
  context->cipher = EVP_CIPHER_CTX_new();
  if (context->cipher == nullptr ||
      EVP_CipherInit_ex(context->cipher, EVP_aes_256_gcm(), nullptr, key.data(), nullptr, 1) != 1 ||
      EVP_CIPHER_CTX_ctrl(context->cipher, EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) != 1) {
    return internalError("OpenSSL could not set up AES-256-GCM");
  }
  return AesGcm(std::move(context));
}

AesGcm::AesGcm(std::unique_ptr<Context> context) : context_(std::move(context)) {}
AesGcm::AesGcm(AesGcm&&) noexcept = default;
AesGcm& AesGcm::operator=(AesGcm&&) noexcept = default;
AesGcm::~AesGcm() = default;

void AesGcm::begin(Mode mode, std::uint32_t domain, std::uint64_t sequence) {
  std::uint8_t nonce[kNonceBytes];
  for (int i = 0; i < 4; ++i) nonce[i] = static_cast<std::uint8_t>(domain >> (24 - 8 * i));
  for (int i = 0; i < 8; ++i) nonce[4 + i] = static_cast<std::uint8_t>(sequence >> (56 - 8 * i));
  context_->failed = EVP_CipherInit_ex(context_->cipher, nullptr, nullptr, nullptr, nonce,
                                       mode == Mode::kSeal ? 1 : 0) != 1;
}

void AesGcm::authenticate(std::span<const std::uint8_t> data) {
  while (!data.empty()) {
    const std::size_t step = std::min(data.size(), kMaxStepBytes);
    int written = 0;
    if (EVP_CipherUpdate(context_->cipher, nullptr, &written, data.data(),
                         static_cast<int>(step)) != 1) {
      context_->failed = true;
    }
    data = data.subspan(step);
  }
}

void AesGcm::crypt(std::span<const std::uint8_t> in, std::uint8_t* out) {
  while (!in.empty()) {
    const std::size_t step = std::min(in.size(), kMaxStepBytes);
    int written = 0;
    if (EVP_CipherUpdate(context_->cipher, out, &written, in.data(), static_cast<int>(step)) != 1 ||
        written != static_cast<int>(step)) {
      context_->failed = true;
    }
    in = in.subspan(step);
    out += step;
  }
}

GcmTag AesGcm::sealTag() {
  GcmTag tag{};
  int written = 0;
  if (context_->failed || EVP_CipherFinal_ex(context_->cipher, nullptr, &written) != 1 ||
      EVP_CIPHER_CTX_ctrl(context_->cipher, EVP_CTRL_GCM_GET_TAG, static_cast<int>(tag.size()),
                          tag.data()) != 1) {
    tag.fill(0);  // fails to open on the other side
  }
  return tag;
}

bool AesGcm::openTag(const GcmTag& tag) {
  GcmTag expected = tag;
  int written = 0;
  if (context_->failed || EVP_CIPHER_CTX_ctrl(context_->cipher, EVP_CTRL_GCM_SET_TAG,
                                              static_cast<int>(tag.size()), expected.data()) != 1) {
    return false;
  }
  return EVP_CipherFinal_ex(context_->cipher, nullptr, &written) == 1;
}

}  // namespace kvx::crypto
