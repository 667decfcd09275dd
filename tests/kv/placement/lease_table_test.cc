// kvx-test-labels: unit serial
#include "kv/placement/lease_table.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

using namespace kvx;
using namespace kvx::kv::placement;
using namespace std::chrono_literals;
using Ids = std::vector<std::string>;

namespace {

const Deadline kT0 = Clock::time_point{} + 1000s;

}  // namespace

TEST_CASE("leases expire oldest expiry first", "[placement]") {
  LeaseTable t;
  REQUIRE(t.grant("r3", kT0 + 30s).isOk());
  REQUIRE(t.grant("r2", kT0 + 10s).isOk());
  REQUIRE(t.grant("r1", kT0 + 20s).isOk());
  REQUIRE(t.grant("r0", kT0 + 10s).isOk());
  CHECK(t.size() == 4);
  CHECK(t.nextExpiry() == kT0 + 10s);
  CHECK(t.takeExpired(kT0 + 9s).empty());
  CHECK(t.takeExpired(kT0 + 20s) == Ids{"r0", "r2", "r1"});  // ties by id; equal to now expires
  CHECK(t.size() == 1);
  CHECK_FALSE(t.contains("r1"));
  CHECK(t.nextExpiry() == kT0 + 30s);
  CHECK(t.takeExpired(kT0 + 1h) == Ids{"r3"});
  CHECK(t.empty());
  CHECK_FALSE(t.nextExpiry().has_value());
}

TEST_CASE("a lease is granted once", "[placement]") {
  LeaseTable t;
  REQUIRE(t.grant("r1", kT0).isOk());
  Status dup = t.grant("r1", kT0 + 5s);
  CHECK(dup.code() == StatusCode::kAlreadyExists);
  CHECK(dup.message().find("request r1") != std::string::npos);
  CHECK(t.expiryOf("r1") == kT0);
}

TEST_CASE("renew moves a lease's expiry either way", "[placement]") {
  LeaseTable t;
  REQUIRE(t.grant("a", kT0 + 10s).isOk());
  REQUIRE(t.grant("b", kT0 + 20s).isOk());
  REQUIRE(t.renew("a", kT0 + 30s).isOk());
  CHECK(t.nextExpiry() == kT0 + 20s);
  CHECK(t.takeExpired(kT0 + 25s) == Ids{"b"});
  REQUIRE(t.renew("a", kT0 + 5s).isOk());
  CHECK(t.expiryOf("a") == kT0 + 5s);
  CHECK(t.takeExpired(kT0 + 5s) == Ids{"a"});

  Status missing = t.renew("b", kT0 + 1h);  // already expired
  CHECK(missing.code() == StatusCode::kNotFound);
  CHECK(missing.message().find("request b") != std::string::npos);
  CHECK(t.empty());
}

TEST_CASE("revoke ends a lease before it expires", "[placement]") {
  LeaseTable t;
  REQUIRE(t.grant("a", kT0 + 10s).isOk());
  REQUIRE(t.grant("b", kT0 + 20s).isOk());
  CHECK(t.revoke("a"));
  CHECK_FALSE(t.revoke("a"));
  CHECK_FALSE(t.revoke("nobody"));
  CHECK(t.renew("a", kT0 + 1h).code() == StatusCode::kNotFound);
  CHECK(t.nextExpiry() == kT0 + 20s);
  CHECK(t.takeExpired(kT0 + 1h) == Ids{"b"});
  CHECK(t.grant("a", kT0).isOk());  // a revoked id may be granted again
  CHECK(t.size() == 1);
}
