#include "doctor/pci_device.h"

#include <charconv>
#include <sstream>

namespace kvx::doctor {
namespace {

// "0000:18:00.0", "10000:e1:00.0" (VMD domains): hex domain, bus, device and function.
bool looksLikePciAddress(std::string_view name) {
  const auto colon = name.rfind(':');
  const auto dot = name.rfind('.');
  return colon != std::string_view::npos && dot != std::string_view::npos && dot > colon &&
         name.find(':') < colon && name.substr(0, 3) != "pci";
}

bool looksLikeHostBridge(std::string_view name) {
  return name.substr(0, 3) == "pci" && name.find(':') != std::string_view::npos;
}

std::vector<std::uint64_t> parseResourceSizes(const std::string& text) {
  std::vector<std::uint64_t> sizes;
  std::istringstream lines(text);
  std::string start, end, flags;
  while (lines >> start >> end >> flags) {
    const auto first = parseHex(start).value_or(0);
    const auto last = parseHex(end).value_or(0);
    sizes.push_back(last > first ? last - first + 1 : 0);
  }
  return sizes;
}

}  // namespace

std::optional<std::uint64_t> parseHex(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  if (text.substr(0, 2) == "0x" || text.substr(0, 2) == "0X") text.remove_prefix(2);
  if (text.empty()) return std::nullopt;
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string PciDevice::rootComplex() const {
  for (const auto& node : upstream) {
    if (node.hostBridge) return node.name;
  }
  return "";
}

Result<PciDevice> readPciDevice(const SystemRoot& root, std::string_view address) {
  const std::string base = "/sys/bus/pci/devices/" + std::string(address);
  PciDevice device;
  device.address = std::string(address);
  KVX_ASSIGN_OR_RETURN(device.sysfsPath, root.resolve(base));

  KVX_ASSIGN_OR_RETURN(std::string vendor, root.readLine(base + "/vendor"));
  KVX_ASSIGN_OR_RETURN(std::string klass, root.readLine(base + "/class"));
  const auto vendorId = parseHex(vendor);
  const auto classCode = parseHex(klass);
  if (!vendorId || !classCode) {
    return invalidArgument("PCI device " + device.address + ": vendor '" + vendor + "' or class '" +
                           klass + "' is not hex");
  }
  device.vendor = static_cast<std::uint32_t>(*vendorId);
  device.classCode = static_cast<std::uint32_t>(*classCode);
  if (auto id = root.readLine(base + "/device"); id.isOk()) {
    device.deviceId = static_cast<std::uint32_t>(parseHex(*id).value_or(0));
  }
  if (auto numa = root.readLine(base + "/numa_node"); numa.isOk()) {
    int node = -1;
    std::from_chars(numa->data(), numa->data() + numa->size(), node);
    device.numaNode = node;
  }
  if (auto resource = root.readText(base + "/resource"); resource.isOk()) {
    device.barBytes = parseResourceSizes(*resource);
  }
  if (auto type = root.readLine(base + "/iommu_group/type"); type.isOk()) {
    device.iommuGroupType = *type;
  }

  // "/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:18:00.0": every component
  // between /sys/devices and the device itself is a node on its way up to the CPU.
  std::filesystem::path prefix;
  const std::filesystem::path path(device.sysfsPath);
  for (auto it = path.begin(); it != path.end(); ++it) {
    prefix /= *it;
    if (std::next(it) == path.end()) break;
    const std::string name = it->string();
    if (looksLikeHostBridge(name)) {
      device.upstream.push_back({name, prefix.string(), true});
    } else if (looksLikePciAddress(name)) {
      device.upstream.push_back({name, prefix.string(), false});
    }
  }
  return device;
}

std::vector<std::string> listPciAddresses(const SystemRoot& root) {
  return root.list("/sys/bus/pci/devices");
}

std::optional<std::uint16_t> readAcsControl(const SystemRoot& root, const PciNode& node) {
  auto text = root.readLine(node.sysfsPath + "/acs_ctrl");
  if (!text.isOk()) return std::nullopt;
  auto value = parseHex(*text);
  if (!value || *value > 0xffff) return std::nullopt;
  return static_cast<std::uint16_t>(*value);
}

}  // namespace kvx::doctor
