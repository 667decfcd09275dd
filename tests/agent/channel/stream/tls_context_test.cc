// kvx-test-labels: unit
// TLS configuration checks at start-up: the three files go together, and a file that is
// missing, unreadable or not what it should be is named in a clear status before any
// connection is made. TLS also lifts the loopback-only rule for a channel without a token.
#include "agent/channel/stream/tls_context.h"

#include <unistd.h>

#include <catch2/catch.hpp>

#include "agent/channel/control_channel.h"
#include "kvx/agent.h"
#include "tests/agent/channel/test_pki.h"

using namespace kvx;
using namespace kvx::agent::channel;
using kvx::test::TestPki;
using kvx::test::TlsFileSet;

namespace {

TlsConfig configOf(const TlsFileSet& files) {
  TlsConfig tls;
  tls.enabled = true;
  tls.certFile = files.cert;
  tls.keyFile = files.key;
  tls.caFile = files.ca;
  return tls;
}

}  // namespace

TEST_CASE("a complete set of files makes a context") {
  TestPki pki;
  pki.makeCa("ca");
  auto context = makeTlsContext(configOf(pki.issue("agent", "ca")));
  REQUIRE(context.isOk());
  CHECK(*context != nullptr);
}

TEST_CASE("enabled TLS needs all three files") {
  TlsConfig tls;
  CHECK(validateTlsConfig(tls).isOk());  // off: nothing needed
  tls.enabled = true;
  tls.certFile = "/etc/kvx/agent.pem";
  tls.caFile = "/etc/kvx/ca.pem";
  const Status status = validateTlsConfig(tls);
  CHECK(status.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(status.message(), Catch::Contains("private key (missing)"));
  CHECK_THAT(status.message(), Catch::Contains("--tls-key"));
  ChannelOptions options;
  options.tls = tls;
  CHECK(validateChannelOptions(options).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("a missing, unreadable or malformed file is named at start-up") {
  TestPki pki;
  pki.makeCa("ca");
  pki.makeCa("other-ca");
  const TlsFileSet good = pki.issue("agent", "ca");
  TlsConfig tls = configOf(good);

  SECTION("missing certificate") {
    tls.certFile = (pki.dir() / "absent.pem").string();
    const Status status = makeTlsContext(tls).status();
    CHECK(status.code() == StatusCode::kNotFound);
    CHECK_THAT(status.message(), Catch::Contains("TLS certificate file '" + tls.certFile + "'"));
    CHECK_THAT(status.message(), Catch::Contains("No such file or directory"));
  }
  SECTION("unreadable key") {
    if (::geteuid() == 0) return;  // root reads any file
    std::filesystem::permissions(good.key, std::filesystem::perms::none);
    const Status status = makeTlsContext(tls).status();
    CHECK(status.code() == StatusCode::kNotFound);
    CHECK_THAT(status.message(), Catch::Contains("TLS private key file"));
    CHECK_THAT(status.message(), Catch::Contains("Permission denied"));
  }
  SECTION("a CA file that is a directory") {
    tls.caFile = pki.dir().string();
    CHECK(makeTlsContext(tls).status().code() == StatusCode::kNotFound);
  }
  SECTION("a certificate file that holds no certificate") {
    tls.certFile = pki.writeText("garbage.pem", "not a certificate\n");
    const Status status = makeTlsContext(tls).status();
    CHECK(status.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(status.message(), Catch::Contains("does not hold a PEM certificate"));
  }
  SECTION("a key that belongs to another certificate") {
    tls.keyFile = pki.issue("someone-else", "ca").key;
    const Status status = makeTlsContext(tls).status();
    CHECK(status.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(status.message(), Catch::Contains("is not the key of the certificate"));
  }
  SECTION("an empty CA file") {
    tls.caFile = pki.writeText("empty-ca.pem", "");
    CHECK(makeTlsContext(tls).status().code() == StatusCode::kInvalidArgument);
  }
  SECTION("ControlChannel::start and Agent::create report it too") {
    tls.certFile = (pki.dir() / "absent.pem").string();
    ChannelOptions options;
    options.tls = tls;
    auto channel = ControlChannel::start(options, {});
    CHECK(channel.status().code() == StatusCode::kNotFound);
    AgentOptions agentOptions;
    agentOptions.name = "tls-agent";
    agentOptions.transport = "inproc";
    agentOptions.tls = {true, tls.certFile, tls.keyFile, tls.caFile};
    const Status created = Agent::create(agentOptions).status();
    CHECK(created.code() == StatusCode::kNotFound);
    CHECK_THAT(created.message(), Catch::Contains("absent.pem"));
    CHECK_THAT(created.message(), Catch::Contains("tls-agent"));
  }
}

TEST_CASE("TLS alone allows a non-loopback listen address") {
  ChannelOptions options;
  options.listenAddress = "0.0.0.0:0";
  const Status plain = validateChannelOptions(options);
  CHECK(plain.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(plain.message(), Catch::Contains("--tls-cert"));
  options.tls = {true, "/etc/kvx/agent.pem", "/etc/kvx/agent.key", "/etc/kvx/ca.pem"};
  CHECK(validateChannelOptions(options).isOk());
}
