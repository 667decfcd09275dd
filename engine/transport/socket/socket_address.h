#pragma once

// SocketAddress: what a socket transport publishes as its localAddress(), and the local
// interface lookup behind it.
//
// Packed form (native byte order, like the frames):
//   u32 magic "KVXs" | u8 version | u8 count | u16 port | u64 instance | u8 protection |
//   32 bytes data key | count x u32 IPv4
// `instance` is a random id drawn when the transport starts: an endpoint that reaches a
// different instance on the same address and port (the peer restarted) is refused there.
// The data key, drawn with it, is what every data connection to this transport derives its
// keys from (frame_protection.h): the packed address is a secret, handed to peers only inside
// the control channel's handshake (encrypted when the peers authenticate) or an exported
// metadata blob. `protection`: the least this transport accepts of a data connection
// (kProtectHeaders to kProtectEncrypted, socket_wire.h).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "crypto/key_bytes.h"
#include "kvx/result.h"

namespace kvx::engine::socket {

inline constexpr std::size_t kMaxAddresses = 16;

struct SocketAddress {
  std::uint64_t instance = 0;
  std::uint16_t port = 0;                // host byte order
  std::vector<std::uint32_t> addresses;  // IPv4, network byte order, in the order to try
  crypto::Key256 dataKey{};
  std::uint32_t protection = 1;  // kProtectHeaders: what data connections to it must have
};

std::vector<std::uint8_t> packSocketAddress(const SocketAddress& address);
// INVALID_ARGUMENT naming what is wrong unless `packed` is a well-formed packed address.
Result<SocketAddress> parseSocketAddress(std::span<const std::uint8_t> packed);

// "198.18.0.2:40123".
std::string formatIpv4(std::uint32_t address, std::uint16_t port);

// Whether `address` (network byte order) is in 127.0.0.0/8.
bool isLoopbackIpv4(std::uint32_t address);

// The addresses of a peer's `published` ones to connect to, in order: all of them, less the
// loopback ones where it published another (a peer with an address off its host may be on
// another host, and a loopback address would reach this host instead).
std::vector<std::uint32_t> addressesToTry(const std::vector<std::uint32_t>& published);

// Where a transport listens and what it publishes, from TransportOptions::netDevices.
struct ListenPlan {
  std::uint32_t bindAddress = 0;         // network byte order; 0 = every interface
  std::vector<std::uint32_t> published;  // network byte order
};

// `netDevices`: a comma-separated list of interface names ("lo", "veth1"): bind to the
// first one's IPv4 address and publish each one's. Empty: bind to every interface and
// publish every IPv4 address of the interfaces that are up, loopback last.
// NOT_FOUND naming the device when a named device has no IPv4 address.
Result<ListenPlan> planListen(const std::string& netDevices);

}  // namespace kvx::engine::socket
