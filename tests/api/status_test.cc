// kvx-test-labels: unit serial
#include "kvx/status.h"

#include <catch2/catch.hpp>
#include <memory>
#include <set>
#include <string>

#include "kvx/result.h"

using kvx::Result;
using kvx::Status;
using kvx::StatusCode;

namespace {

Result<int> half(int value) {
  if (value % 2 != 0) return kvx::invalidArgument("odd value " + std::to_string(value));
  return value / 2;
}

Result<int> quarter(int value) {
  KVX_ASSIGN_OR_RETURN(int h, half(value));
  KVX_ASSIGN_OR_RETURN(int q, half(h));
  return q;
}

Status checkPositive(int value) {
  if (value <= 0) return kvx::invalidArgument("not positive");
  return Status::ok();
}

Status checkBoth(int a, int b) {
  KVX_RETURN_IF_ERROR(checkPositive(a));
  KVX_RETURN_IF_ERROR(checkPositive(b).withContext("second"));
  return Status::ok();
}

}  // namespace

TEST_CASE("OK status carries no message", "[status]") {
  Status ok;
  CHECK(ok.isOk());
  CHECK(ok.code() == StatusCode::kOk);
  CHECK(ok.message().empty());
  CHECK(ok.toString() == "OK");
  CHECK(ok.withContext("ignored").isOk());
}

TEST_CASE("error status keeps code and message", "[status]") {
  Status s = kvx::timedOut("transfer 7 did not complete within 2000 ms");
  CHECK_FALSE(s.isOk());
  CHECK(s.code() == StatusCode::kTimedOut);
  CHECK(s.toString() == "TIMED_OUT: transfer 7 did not complete within 2000 ms");
  Status wrapped = s.withContext("peer 'decode0'");
  CHECK(wrapped.code() == StatusCode::kTimedOut);
  CHECK(wrapped.message() == "peer 'decode0': transfer 7 did not complete within 2000 ms");
  CHECK(s == kvx::timedOut("transfer 7 did not complete within 2000 ms"));
  CHECK_FALSE(s == kvx::cancelled("transfer 7 did not complete within 2000 ms"));
}

TEST_CASE("an error built with the OK code is OK", "[status]") {
  CHECK(Status(StatusCode::kOk, "ignored").isOk());
}

TEST_CASE("every code has a distinct name", "[status]") {
  std::set<std::string_view> names;
  for (int c = 0; c <= static_cast<int>(StatusCode::kInternal); ++c) {
    names.insert(kvx::toString(static_cast<StatusCode>(c)));
  }
  CHECK(names.size() == static_cast<std::size_t>(StatusCode::kInternal) + 1);
  CHECK(names.count("UNKNOWN") == 0);
}

TEST_CASE("Result holds a value or a status", "[result]") {
  Result<int> good = half(8);
  REQUIRE(good.isOk());
  CHECK(*good == 4);
  CHECK(good.status().isOk());

  Result<int> bad = half(3);
  REQUIRE_FALSE(bad.isOk());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(bad.status().message() == "odd value 3");
  CHECK(bad.valueOr(-1) == -1);
}

TEST_CASE("a Result built from an OK status is an internal error", "[result]") {
  Result<int> r{Status::ok()};
  CHECK_FALSE(r.isOk());
  CHECK(r.status().code() == StatusCode::kInternal);
}

TEST_CASE("KVX_ASSIGN_OR_RETURN and KVX_RETURN_IF_ERROR propagate the first error", "[result]") {
  CHECK(*quarter(12) == 3);
  Result<int> r = quarter(6);  // 6 -> 3 -> odd
  REQUIRE_FALSE(r.isOk());
  CHECK(r.status().message() == "odd value 3");

  CHECK(checkBoth(1, 1).isOk());
  CHECK(checkBoth(0, 1).message() == "not positive");
  CHECK(checkBoth(1, 0).message() == "second: not positive");
}

TEST_CASE("Result works with move-only values", "[result]") {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(5);
  REQUIRE(r.isOk());
  std::unique_ptr<int> p = std::move(r).value();
  CHECK(*p == 5);
}
