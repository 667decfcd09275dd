// kvx-test-labels: unit serial
// Where the control channel's token comes from: explicit, file, environment.
#include "agent/channel/auth_token.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <string>

#include "tests/support/temp_file.h"

using kvx::StatusCode;
using namespace kvx::agent::channel;
using kvx::test::TempFile;

namespace {

// Sets or clears KVX_AUTH_TOKEN for one test, restoring it after.
class TokenVariable {
 public:
  explicit TokenVariable(const char* value) {
    if (const char* old = std::getenv(kAuthTokenVariable)) saved_ = old;
    if (value) {
      ::setenv(kAuthTokenVariable, value, 1);
    } else {
      ::unsetenv(kAuthTokenVariable);
    }
  }
  ~TokenVariable() {
    if (saved_) {
      ::setenv(kAuthTokenVariable, saved_->c_str(), 1);
    } else {
      ::unsetenv(kAuthTokenVariable);
    }
  }

 private:
  std::optional<std::string> saved_;
};

}  // namespace

TEST_CASE("an explicit token wins, then the file, then KVX_AUTH_TOKEN") {
  TokenVariable variable("from-the-environment-123");
  TempFile file("from-the-file-0123456789\n");
  CHECK(*resolveAuthToken("explicit-token-0123", file.path()) == "explicit-token-0123");
  CHECK(*resolveAuthToken("", file.path()) == "from-the-file-0123456789");
  CHECK(*resolveAuthToken("", "") == "from-the-environment-123");
}

TEST_CASE("no token anywhere means none") {
  TokenVariable variable(nullptr);
  auto token = resolveAuthToken("", "");
  REQUIRE(token.isOk());
  CHECK(token->empty());
}

TEST_CASE("token file errors name the file, never the token") {
  TokenVariable variable(nullptr);
  auto missing = resolveAuthToken("", "/nonexistent/kvx.token");
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK_THAT(missing.status().message(), Catch::Contains("/nonexistent/kvx.token"));

  TempFile blank(" \n\n");
  auto empty = resolveAuthToken("", blank.path());
  CHECK(empty.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(empty.status().message(), Catch::Contains("is empty"));

  TempFile huge(std::string(kMaxAuthTokenBytes + 1, 'x'));
  auto tooBig = resolveAuthToken("", huge.path());
  CHECK(tooBig.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(tooBig.status().message(), Catch::Contains(huge.path()) && !Catch::Contains("xxxx"));
}

TEST_CASE("only trailing whitespace is stripped from a token file") {
  TempFile file("  inner space kept\t\r\n");
  CHECK(*resolveAuthToken("", file.path()) == "  inner space kept");
}
