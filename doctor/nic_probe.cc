#include "doctor/nic_probe.h"

#include <algorithm>
#include <charconv>

namespace kvx::doctor {
namespace {

// "4: ACTIVE" -> "ACTIVE".
std::string portState(const std::string& line) {
  const auto colon = line.find(':');
  if (colon == std::string::npos) return line;
  const auto word = line.find_first_not_of(' ', colon + 1);
  return word == std::string::npos ? "" : line.substr(word);
}

RdmaPort readPort(const SystemRoot& root, const std::string& dir, unsigned number) {
  RdmaPort port;
  port.number = number;
  port.state = portState(root.readLine(dir + "/state").valueOr(std::string()));
  port.rate = root.readLine(dir + "/rate").valueOr(std::string());
  port.linkLayer = root.readLine(dir + "/link_layer").valueOr(std::string());
  port.gid0 = root.readLine(dir + "/gids/0").valueOr(std::string());
  return port;
}

}  // namespace

bool RdmaPort::gidUnset() const {
  return !gid0.empty() && gid0.find_first_not_of("0:") == std::string::npos;
}

bool RdmaNic::anyPortActive() const {
  return std::any_of(ports.begin(), ports.end(), [](const RdmaPort& p) { return p.active(); });
}

NicScan probeNics(const SystemRoot& root) {
  NicScan scan;
  for (const std::string& name : root.list("/sys/class/infiniband")) {
    const std::string base = "/sys/class/infiniband/" + name;
    RdmaNic nic;
    nic.name = name;
    if (auto device = root.resolve(base + "/device"); device.isOk()) {
      const std::string address = std::filesystem::path(*device).filename().string();
      auto pci = readPciDevice(root, address);
      if (pci.isOk()) {
        nic.pci = std::move(pci).value();
      } else {
        scan.problems.push_back(name + ": " + pci.status().message());
      }
    }
    for (const std::string& port : root.list(base + "/ports")) {
      unsigned number = 0;
      const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), number);
      if (error != std::errc() || end != port.data() + port.size()) continue;
      nic.ports.push_back(readPort(root, base + "/ports/" + port, number));
    }
    std::sort(nic.ports.begin(), nic.ports.end(),
              [](const RdmaPort& a, const RdmaPort& b) { return a.number < b.number; });
    scan.nics.push_back(std::move(nic));
  }
  return scan;
}

}  // namespace kvx::doctor
