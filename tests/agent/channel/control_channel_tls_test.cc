// kvx-test-labels: unit
// The control channel over TLS: mutual certificate authentication against a CA made at run
// time, a token on top, and what each mismatch gets (another CA, a plain-TCP peer either
// way, a silent client): a clear UNAUTHENTICATED or a bounded close, and a listener that
// keeps serving.
#include <catch2/catch.hpp>

#include "tests/agent/channel/control_channel_fixture.h"
#include "tests/agent/channel/test_pki.h"
#include "tests/agent/channel/tls_log_capture.h"

using namespace kvx::test::channel_fixture;
using kvx::test::LogCapture;
using kvx::test::TestPki;
using kvx::test::TlsFileSet;

namespace {

ChannelOptions tlsOptions(const TlsFileSet& files, std::chrono::milliseconds readTimeout = 5s) {
  ChannelOptions options = TestChannel::defaultOptions(readTimeout);
  options.tls.enabled = true;
  options.tls.certFile = files.cert;
  options.tls.keyFile = files.key;
  options.tls.caFile = files.ca;
  return options;
}

// A PKI with one CA, "ca", and a certificate from it for each name asked.
struct OneCa {
  TestPki pki;
  OneCa() { pki.makeCa("ca"); }
  TlsFileSet issue(const std::string& name) { return pki.issue(name, "ca"); }
};

}  // namespace

TEST_CASE("mutual TLS: metadata both ways, updates, and a token on top") {
  OneCa ca;
  const bool withToken = GENERATE(false, true);
  ChannelOptions serverOptions = tlsOptions(ca.issue("server"));
  ChannelOptions clientOptions = tlsOptions(ca.issue("client"));
  if (withToken) {
    serverOptions.authToken = kSharedToken;
    clientOptions.authToken = kSharedToken;
  }
  TestChannel server("server", serverOptions);
  TestChannel client("client", clientOptions);
  auto remote = client.channel->connect(server.address(), sampleMetadata("client"), deadlineIn(5s));
  REQUIRE(remote.isOk());
  CHECK(sameMetadata(*remote, sampleMetadata("server")));
  REQUIRE(server.events.waitFor([&] { return server.events.hellos.size() == 1; }));
  CHECK(sameMetadata(server.events.hellos[0], sampleMetadata("client")));

  REQUIRE(server.channel->broadcastMetadata(sampleMetadata("server", 3)).isOk());
  REQUIRE(client.events.waitFor([&] { return client.events.updates.size() == 1; }));
  CHECK(sameMetadata(client.events.updates[0], sampleMetadata("server", 3)));
  REQUIRE(client.channel->broadcastMetadata(sampleMetadata("client", 4)).isOk());
  REQUIRE(server.events.waitFor([&] { return server.events.updates.size() == 1; }));

  // A goodbye travels over TLS too, and is seen as one.
  REQUIRE(client.channel->disconnect("server").isOk());
  REQUIRE(server.events.waitFor([&] { return server.events.disconnects.size() == 1; }));
  CHECK(server.events.disconnects[0].second.code() == StatusCode::kCancelled);
}

TEST_CASE("TLS with a token: a client with the right certificate but no token is refused") {
  OneCa ca;
  ChannelOptions serverOptions = tlsOptions(ca.issue("server"));
  serverOptions.authToken = kSharedToken;
  TestChannel server("server", serverOptions);
  TestChannel client("client", tlsOptions(ca.issue("client")));
  auto remote = client.channel->connect(server.address(), sampleMetadata("client"), deadlineIn(5s));
  REQUIRE_FALSE(remote.isOk());
  CHECK(remote.status().code() == StatusCode::kUnauthenticated);
  CHECK(hellosSeen(server) == 0);
}

TEST_CASE("a certificate from another CA is refused with UNAUTHENTICATED on both sides") {
  LogCapture log;
  TestPki pki;
  pki.makeCa("ca");
  pki.makeCa("rogue-ca");
  TestChannel server("server", tlsOptions(pki.issue("server", "ca")));

  SECTION("the client's certificate is not from the listener's CA") {
    // The client trusts the listener's CA, so only the listener has cause to refuse.
    TestChannel client("client", tlsOptions(pki.issue("client", "rogue-ca", "ca")));
    auto remote =
        client.channel->connect(server.address(), sampleMetadata("client"), deadlineIn(5s));
    REQUIRE_FALSE(remote.isOk());
    CHECK(remote.status().code() == StatusCode::kUnauthenticated);
    CHECK_THAT(remote.status().message(), Catch::Contains("rejected this agent's TLS certificate"));
    CHECK(log.waitFor({"UNAUTHENTICATED", "is not trusted"}));
  }
  SECTION("the listener's certificate is not from the client's CA") {
    TestChannel client("client", tlsOptions(pki.issue("client", "rogue-ca")));
    auto remote =
        client.channel->connect(server.address(), sampleMetadata("client"), deadlineIn(5s));
    REQUIRE_FALSE(remote.isOk());
    CHECK(remote.status().code() == StatusCode::kUnauthenticated);
    CHECK_THAT(remote.status().message(), Catch::Contains("is not trusted"));
    CHECK(log.waitFor({"UNAUTHENTICATED", "rejected this agent's TLS certificate"}));
  }
  CHECK(hellosSeen(server) == 0);
  // The listener still serves a client whose certificate its CA issued.
  TestChannel good("good", tlsOptions(pki.issue("good", "ca")));
  CHECK(good.channel->connect(server.address(), sampleMetadata("good"), deadlineIn(5s)).isOk());
}

TEST_CASE("a plain-TCP agent is told that the listener requires TLS, and it keeps serving") {
  OneCa ca;
  TestChannel server("server", tlsOptions(ca.issue("server")));
  const bool withToken = GENERATE(false, true);
  ChannelOptions plainOptions = TestChannel::defaultOptions();
  if (withToken) plainOptions.authToken = kSharedToken;
  TestChannel plain("plain", plainOptions);
  auto remote = plain.channel->connect(server.address(), sampleMetadata("plain"), deadlineIn(5s));
  REQUIRE_FALSE(remote.isOk());
  CHECK(remote.status().code() == StatusCode::kUnauthenticated);
  CHECK_THAT(remote.status().message(), Catch::Contains("requires TLS"));
  CHECK(hellosSeen(server) == 0);
  requireRealConnectWorks(server, tlsOptions(ca.issue("prober")));
}

TEST_CASE("a TLS agent connecting to a plain listener fails clearly; the listener keeps serving") {
  LogCapture log;
  OneCa ca;
  TestChannel server("server");
  TestChannel client("client", tlsOptions(ca.issue("client")));
  auto remote = client.channel->connect(server.address(), sampleMetadata("client"), deadlineIn(5s));
  REQUIRE_FALSE(remote.isOk());
  CHECK(remote.status().code() == StatusCode::kUnauthenticated);
  CHECK_THAT(remote.status().message(), Catch::Contains("does not speak TLS"));
  CHECK(log.waitFor({"PROTOCOL_ERROR", "the peer started a TLS handshake"}));
  CHECK(hellosSeen(server) == 0);
  requireRealConnectWorks(server);
}

TEST_CASE("a client that stalls before or during the TLS handshake is closed at the deadline") {
  OneCa ca;
  TestChannel server("server", tlsOptions(ca.issue("server"), 300ms));
  const std::string sent = GENERATE(as<std::string>{}, "", "\x16\x03\x01");
  RawClient raw(server.address());
  if (!sent.empty()) raw.send(sent);
  const auto start = kvx::Clock::now();
  CHECK(raw.readUntilClosed());
  const auto took = kvx::Clock::now() - start;
  CHECK(took >= 250ms);
  CHECK(took < 2s);
  requireRealConnectWorks(server, tlsOptions(ca.issue("prober")));
}

TEST_CASE("TLS handshakes in progress count against maxPendingHandshakes") {
  OneCa ca;
  ChannelOptions options = tlsOptions(ca.issue("server"), 1s);
  options.maxPendingHandshakes = 1;
  TestChannel server("server", options);
  {
    RawClient silent(server.address());  // holds the one handshake slot until its deadline
    std::this_thread::sleep_for(100ms);
    TestChannel client("client", tlsOptions(ca.issue("client")));
    auto refused =
        client.channel->connect(server.address(), sampleMetadata("client"), deadlineIn(5s));
    REQUIRE_FALSE(refused.isOk());
    CHECK(refused.status().code() == StatusCode::kResourceExhausted);
    CHECK(silent.readUntilClosed());  // the deadline frees the slot
  }
  requireRealConnectWorks(server, tlsOptions(ca.issue("prober")));
}
