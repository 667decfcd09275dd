// kvx-test-labels: unit
#include "engine/transport/socket/socket_address.h"

#include <arpa/inet.h>

#include <catch2/catch.hpp>

namespace kvx::engine::socket {

TEST_CASE("socket address: packs and parses, every address in order", "[socket]") {
  SocketAddress address;
  address.instance = 0xfeedfacecafebeef;
  address.port = 40123;
  address.addresses = {htonl(0xc6120002), htonl(INADDR_LOOPBACK)};
  const std::vector<std::uint8_t> packed = packSocketAddress(address);
  auto back = parseSocketAddress(packed);
  REQUIRE(back.isOk());
  CHECK(back->instance == address.instance);
  CHECK(back->port == 40123);
  CHECK(back->addresses == address.addresses);
  CHECK(formatIpv4(back->addresses[0], back->port) == "198.18.0.2:40123");
}

TEST_CASE("socket address: malformed addresses are refused", "[socket]") {
  SocketAddress address;
  address.instance = 1;
  address.port = 1;
  address.addresses = {htonl(INADDR_LOOPBACK)};
  std::vector<std::uint8_t> packed = packSocketAddress(address);
  std::vector<std::uint8_t> cut(packed.begin(), packed.end() - 1);
  CHECK(parseSocketAddress(cut).status().code() == StatusCode::kInvalidArgument);
  std::vector<std::uint8_t> noAddresses = packed;
  noAddresses[5] = 0;
  noAddresses.resize(noAddresses.size() - 4);
  CHECK(parseSocketAddress(noAddresses).status().message().find("0 IPv4") != std::string::npos);
  address.port = 0;
  CHECK(parseSocketAddress(packSocketAddress(address)).status().message().find("port 0") !=
        std::string::npos);
  CHECK_FALSE(parseSocketAddress({}).isOk());
}

TEST_CASE("socket address: listening on lo publishes 127.0.0.1 only", "[socket]") {
  auto plan = planListen("lo");
  REQUIRE(plan.isOk());
  CHECK(plan->bindAddress == htonl(INADDR_LOOPBACK));
  CHECK(plan->published == std::vector<std::uint32_t>{htonl(INADDR_LOOPBACK)});
}

TEST_CASE("socket address: every interface when none is named, loopback last", "[socket]") {
  auto plan = planListen("");
  REQUIRE(plan.isOk());
  CHECK(plan->bindAddress == 0);
  REQUIRE_FALSE(plan->published.empty());
  CHECK(plan->published.back() == htonl(INADDR_LOOPBACK));
}

TEST_CASE("socket address: a peer's loopback addresses are tried only where it has no other",
          "[socket]") {
  const std::uint32_t loopback = htonl(INADDR_LOOPBACK);
  const std::uint32_t offHost = inet_addr("198.18.1.1");
  const std::uint32_t second = inet_addr("10.77.0.1");
  // A peer off loopback may be on another host: 127.0.0.1 would reach this one.
  CHECK(addressesToTry({offHost, loopback, second}) == std::vector<std::uint32_t>{offHost, second});
  CHECK(addressesToTry({loopback}) == std::vector<std::uint32_t>{loopback});
  CHECK(addressesToTry({loopback, inet_addr("127.0.0.2")}).size() == 2);
}

TEST_CASE("socket address: an unknown device is NOT_FOUND, named", "[socket]") {
  auto plan = planListen("lo,kvx-no-such0");
  REQUIRE(plan.status().code() == StatusCode::kNotFound);
  CHECK(plan.status().message().find("kvx-no-such0") != std::string::npos);
  // It names the devices there are, loopback among them.
  const std::string message = plan.status().message();
  const std::size_t list = message.find("the interfaces up with one:");
  REQUIRE(list != std::string::npos);
  CHECK(message.find(" lo", list) != std::string::npos);
}

}  // namespace kvx::engine::socket
