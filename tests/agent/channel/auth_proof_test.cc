// kvx-test-labels: unit serial
// The HMAC proofs of the control channel's authentication.
#include "agent/channel/auth_proof.h"

#include <catch2/catch.hpp>
#include <string>

using namespace kvx::agent::channel;

namespace {

AuthBytes filled(std::uint8_t value) {
  AuthBytes bytes{};
  bytes.fill(value);
  return bytes;
}

}  // namespace

TEST_CASE("a proof depends on the token, both nonces, their order and the side") {
  const std::string token = "0123456789abcdef0123";
  const AuthBytes a = filled(1);
  const AuthBytes b = filled(2);
  const AuthBytes proof = serverProof(token, a, b);
  CHECK(proofMatches(proof, serverProof(token, a, b)));
  CHECK_FALSE(proofMatches(proof, serverProof(token + "x", a, b)));
  CHECK_FALSE(proofMatches(proof, serverProof(token, a, filled(3))));
  CHECK_FALSE(proofMatches(proof, serverProof(token, b, a)));
  // A server's proof cannot be reflected back as a client's over the same nonces.
  CHECK_FALSE(proofMatches(proof, clientProof(token, a, b)));
  CHECK_FALSE(proofMatches(clientProof(token, b, a), serverProof(token, a, b)));
}

TEST_CASE("HMAC-SHA256 matches a known answer") {
  // HMAC-SHA256(key "key", "kvx-server" | 32 x 0x00 | 32 x 0x00), computed independently
  // with Python's hmac module.
  const AuthBytes zero{};
  CHECK(authBytesToHex(serverProof("key", zero, zero)) ==
        "43ca82eb4c2b9c36fb7507a4cbdb2919e8eb7898757826367e1ddce3bdbf8e95");
}

TEST_CASE("nonces are fresh") {
  auto first = randomNonce();
  auto second = randomNonce();
  REQUIRE(first.isOk());
  REQUIRE(second.isOk());
  CHECK_FALSE(proofMatches(*first, *second));
  CHECK_FALSE(proofMatches(*first, AuthBytes{}));
}

TEST_CASE("proofMatches compares every byte") {
  AuthBytes a = filled(7);
  AuthBytes b = a;
  CHECK(proofMatches(a, b));
  b[31] ^= 1;
  CHECK_FALSE(proofMatches(a, b));
  b = a;
  b[0] ^= 0x80;
  CHECK_FALSE(proofMatches(a, b));
}
