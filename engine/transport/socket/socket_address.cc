#include "engine/transport/socket/socket_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>

namespace kvx::engine::socket {
namespace {

constexpr std::uint32_t kAddressMagic = 0x7358564b;  // the bytes "KVXs" (little-endian)
constexpr std::uint8_t kAddressVersion = 2;
constexpr std::size_t kKeyOffset = 4 + 1 + 1 + 2 + 8 + 1;
constexpr std::size_t kFixedBytes = kKeyOffset + crypto::kKeyBytes;
// The protection levels of socket_wire.h (kProtectHeaders to kProtectEncrypted).
constexpr std::uint8_t kLeastProtection = 1;
constexpr std::uint8_t kMostProtection = 3;

struct InterfaceAddress {
  std::string name;
  std::uint32_t address = 0;  // network byte order
  bool loopback = false;
};

Result<std::vector<InterfaceAddress>> interfaceAddresses() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) {
    return transportError(std::string("getifaddrs failed: ") + std::strerror(errno));
  }
  std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> owner(list, ::freeifaddrs);
  std::vector<InterfaceAddress> out;
  for (ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    if ((entry->ifa_flags & IFF_UP) == 0) continue;
    InterfaceAddress found;
    found.name = entry->ifa_name;
    found.address = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr)->sin_addr.s_addr;
    found.loopback = (entry->ifa_flags & IFF_LOOPBACK) != 0;
    out.push_back(found);
  }
  return out;
}

std::vector<std::string> splitDevices(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace

std::vector<std::uint8_t> packSocketAddress(const SocketAddress& address) {
  const std::size_t count = std::min(address.addresses.size(), kMaxAddresses);
  std::vector<std::uint8_t> out(kFixedBytes + 4 * count);
  const std::uint8_t countByte = static_cast<std::uint8_t>(count);
  std::memcpy(out.data(), &kAddressMagic, 4);
  out[4] = kAddressVersion;
  out[5] = countByte;
  std::memcpy(out.data() + 6, &address.port, 2);
  std::memcpy(out.data() + 8, &address.instance, 8);
  out[16] = static_cast<std::uint8_t>(address.protection);
  std::memcpy(out.data() + kKeyOffset, address.dataKey.data(), crypto::kKeyBytes);
  for (std::size_t i = 0; i < count; ++i) {
    std::memcpy(out.data() + kFixedBytes + 4 * i, &address.addresses[i], 4);
  }
  return out;
}

Result<SocketAddress> parseSocketAddress(std::span<const std::uint8_t> packed) {
  const std::string what =
      "socket transport address of " + std::to_string(packed.size()) + " bytes";
  if (packed.size() < kFixedBytes) {
    return invalidArgument(what + " is shorter than its fixed " + std::to_string(kFixedBytes) +
                           " bytes");
  }
  std::uint32_t magic = 0;
  std::memcpy(&magic, packed.data(), 4);
  if (magic != kAddressMagic) return invalidArgument(what + " has the wrong magic");
  if (packed[4] != kAddressVersion) {
    return invalidArgument(what + " has version " + std::to_string(packed[4]) +
                           "; this build reads " + std::to_string(kAddressVersion));
  }
  const std::size_t count = packed[5];
  if (count == 0 || count > kMaxAddresses) {
    return invalidArgument(what + " lists " + std::to_string(count) + " IPv4 addresses (1 to " +
                           std::to_string(kMaxAddresses) + ")");
  }
  if (packed.size() != kFixedBytes + 4 * count) {
    return invalidArgument(what + " should be " + std::to_string(kFixedBytes + 4 * count) +
                           " bytes for its " + std::to_string(count) + " addresses");
  }
  SocketAddress address;
  std::memcpy(&address.port, packed.data() + 6, 2);
  std::memcpy(&address.instance, packed.data() + 8, 8);
  if (address.port == 0) return invalidArgument(what + " has port 0");
  if (packed[16] < kLeastProtection || packed[16] > kMostProtection) {
    return invalidArgument(what + " asks for protection " + std::to_string(packed[16]) +
                           ", which this build does not know");
  }
  address.protection = packed[16];
  std::memcpy(address.dataKey.data(), packed.data() + kKeyOffset, crypto::kKeyBytes);
  address.addresses.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    std::memcpy(&address.addresses[i], packed.data() + kFixedBytes + 4 * i, 4);
  }
  return address;
}

bool isLoopbackIpv4(std::uint32_t address) { return (ntohl(address) >> 24) == 127; }

std::string formatIpv4(std::uint32_t address, std::uint16_t port) {
  char text[INET_ADDRSTRLEN] = {};
  in_addr in{};
  in.s_addr = address;
  ::inet_ntop(AF_INET, &in, text, sizeof(text));
  return std::string(text) + ":" + std::to_string(port);
}

std::vector<std::uint32_t> addressesToTry(const std::vector<std::uint32_t>& published) {
  const bool offHost = std::any_of(published.begin(), published.end(),
                                   [](std::uint32_t ip) { return !isLoopbackIpv4(ip); });
  std::vector<std::uint32_t> chosen;
  for (std::uint32_t ip : published) {
    if (!offHost || !isLoopbackIpv4(ip)) chosen.push_back(ip);
  }
  return chosen;
}

Result<ListenPlan> planListen(const std::string& netDevices) {
  KVX_ASSIGN_OR_RETURN(std::vector<InterfaceAddress> interfaces, interfaceAddresses());
  ListenPlan plan;
  const std::vector<std::string> devices = splitDevices(netDevices);
  if (devices.empty()) {
    for (bool loopback : {false, true}) {
      for (const InterfaceAddress& entry : interfaces) {
        if (entry.loopback == loopback && plan.published.size() < kMaxAddresses) {
          plan.published.push_back(entry.address);
        }
      }
    }
    if (plan.published.empty()) return notFound("no network interface with an IPv4 address is up");
    return plan;
  }
  for (const std::string& device : devices) {
    bool found = false;
    for (const InterfaceAddress& entry : interfaces) {
      if (entry.name != device) continue;
      if (plan.published.empty()) plan.bindAddress = entry.address;
      if (plan.published.size() < kMaxAddresses) plan.published.push_back(entry.address);
      found = true;
      break;
    }
    if (!found) {
      std::vector<std::string> present;  // an interface may hold several addresses
      for (const InterfaceAddress& entry : interfaces) {
        if (std::find(present.begin(), present.end(), entry.name) == present.end()) {
          present.push_back(entry.name);
        }
      }
      std::string names;
      for (const std::string& name : present) names += (names.empty() ? " " : ", ") + name;
      return notFound("network device '" + device +
                      "' has no IPv4 address or is down; the interfaces up with one:" +
                      (names.empty() ? std::string(" none") : names) +
                      " (set the agent's net devices to one of them, or auto)");
    }
  }
  if (devices.size() > 1) plan.bindAddress = 0;  // several devices: listen on all of them
  return plan;
}

}  // namespace kvx::engine::socket
