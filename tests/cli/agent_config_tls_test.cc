// kvx-test-labels: unit serial
// `kvx agent --tls-cert/--tls-key/--tls-ca`: TLS on when all three are given, a usage error
// for some but not all, and the KVX_TLS_* variables.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "cli/agent_options.h"

using namespace kvx;
using namespace kvx::cli;
using namespace kvx::daemon;

namespace {

constexpr const char* kVariables[] = {"KVX_TLS_CERT", "KVX_TLS_KEY", "KVX_TLS_CA"};

std::vector<std::string> decodeWith(const std::vector<std::string>& more) {
  std::vector<std::string> args{"--role", "decode", "--name", "d0", "--blocks", "64"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

}  // namespace

TEST_CASE("--tls-cert, --tls-key and --tls-ca turn TLS on together", "[agent_config]") {
  for (const char* name : kVariables) ::unsetenv(name);

  SECTION("none: TLS off") {
    auto config = parseAgentConfig(decodeWith({}));
    REQUIRE(config.isOk());
    auto options = toKvAgentOptions(*config);
    REQUIRE(options.isOk());
    CHECK_FALSE(options->agent.tls.enabled);
  }
  SECTION("all three: TLS on with those files") {
    auto config = parseAgentConfig(decodeWith(
        {"--tls-cert", "/etc/kvx/d0.pem", "--tls-key", "/etc/kvx/d0.key", "--tls-ca", "ca.pem"}));
    REQUIRE(config.isOk());
    auto options = toKvAgentOptions(*config);
    REQUIRE(options.isOk());
    CHECK(options->agent.tls.enabled);
    CHECK(options->agent.tls.certFile == "/etc/kvx/d0.pem");
    CHECK(options->agent.tls.keyFile == "/etc/kvx/d0.key");
    CHECK(options->agent.tls.caFile == "ca.pem");
  }
  SECTION("some but not all: a usage error naming what was given") {
    auto config = parseAgentConfig(decodeWith({"--tls-cert", "d0.pem", "--tls-ca", "ca.pem"}));
    REQUIRE_FALSE(config.isOk());
    CHECK(config.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(config.status().message(), Catch::Contains("go together"));
    CHECK_THAT(config.status().message(), Catch::Contains("got --tls-cert --tls-ca only"));
  }
  SECTION("from the environment") {
    ::setenv("KVX_TLS_CERT", "env.pem", 1);
    ::setenv("KVX_TLS_KEY", "env.key", 1);
    ::setenv("KVX_TLS_CA", "env-ca.pem", 1);
    auto config = parseAgentConfig(decodeWith({}));
    for (const char* name : kVariables) ::unsetenv(name);
    REQUIRE(config.isOk());
    CHECK(config->tlsCert == "env.pem");
    CHECK(config->tlsKey == "env.key");
    CHECK(config->tlsCa == "env-ca.pem");
  }
}
