// kvx-test-labels: unit serial
#include "agent/channel/host_port.h"

#include <catch2/catch.hpp>

using kvx::StatusCode;
using kvx::agent::channel::formatHostPort;
using kvx::agent::channel::parseHostPort;

TEST_CASE("host:port parses IPv4 and bracketed IPv6 literals") {
  auto v4 = parseHostPort("127.0.0.1:4000");
  REQUIRE(v4.isOk());
  CHECK(v4->port() == 4000);
  CHECK(formatHostPort(*v4) == "127.0.0.1:4000");
  auto v6 = parseHostPort("[::1]:0");
  REQUIRE(v6.isOk());
  CHECK(v6->address().is_v6());
  CHECK(formatHostPort(*v6) == "[::1]:0");
  CHECK(parseHostPort("0.0.0.0:65535").isOk());
}

TEST_CASE("bad host:port strings get a clear error") {
  auto message = [](std::string_view text) {
    auto result = parseHostPort(text);
    REQUIRE_FALSE(result.isOk());
    CHECK(result.status().code() == StatusCode::kInvalidArgument);
    return result.status().message();
  };
  CHECK_THAT(message(""), Catch::Contains("missing ':port'"));
  CHECK_THAT(message("127.0.0.1"), Catch::Contains("missing ':port'"));
  CHECK_THAT(message(":80"), Catch::Contains("empty host"));
  CHECK_THAT(message("127.0.0.1:"), Catch::Contains("port '' is not a number in 0..65535"));
  CHECK_THAT(message("127.0.0.1:65536"), Catch::Contains("port '65536' is not a number"));
  CHECK_THAT(message("127.0.0.1:-1"), Catch::Contains("port '-1' is not a number"));
  CHECK_THAT(message("127.0.0.1:80x"), Catch::Contains("port '80x' is not a number"));
  CHECK_THAT(message("::1:80"), Catch::Contains("write IPv6 addresses as [addr]:port"));
  CHECK_THAT(message("[::1]80"), Catch::Contains("is not [IPv6]:port"));
  CHECK_THAT(message("[::1"), Catch::Contains("is not [IPv6]:port"));
  CHECK_THAT(message("localhost:80"),
             Catch::Contains("host 'localhost' is not an IPv4 or IPv6 literal"));
  CHECK_THAT(message("300.1.1.1:80"), Catch::Contains("not an IPv4 or IPv6 literal"));
}
