#include "doctor/gpu_probe.h"

#include <charconv>
#include <sstream>

namespace kvx::doctor {
namespace {

// The first word after "NVRM version:" that looks like a driver version (digits and dots).
std::optional<std::string> parseDriverVersion(const std::string& text) {
  const auto start = text.find("NVRM version:");
  if (start == std::string::npos) return std::nullopt;
  std::istringstream words(text.substr(start, text.find('\n', start) - start));
  std::string word;
  while (words >> word) {
    const bool digitsAndDots = word.find_first_not_of("0123456789.") == std::string::npos;
    if (digitsAndDots && word.find('.') != std::string::npos) return word;
  }
  return std::nullopt;
}

// "Model: \t\t NVIDIA H100 80GB HBM3" -> "NVIDIA H100 80GB HBM3".
std::string informationField(const std::string& text, std::string_view key) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(key, 0) != 0 || line.size() <= key.size() || line[key.size()] != ':') continue;
    const auto value = line.find_first_not_of(" \t", key.size() + 1);
    return value == std::string::npos ? "" : line.substr(value);
  }
  return "";
}

std::optional<std::uint64_t> parseDecimal(const std::string& text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

GpuScan probeGpus(const SystemRoot& root) {
  GpuScan scan;
  if (auto version = root.readText("/proc/driver/nvidia/version"); version.isOk()) {
    scan.driverVersion = parseDriverVersion(*version).value_or("unknown version");
  }
  for (const std::string& address : listPciAddresses(root)) {
    auto device = readPciDevice(root, address);
    if (!device.isOk()) {
      // Only an unreadable NVIDIA device matters here; peek at its vendor to tell.
      auto vendor = root.readLine("/sys/bus/pci/devices/" + address + "/vendor");
      if (vendor.isOk() && parseHex(*vendor) == kNvidiaVendorId) {
        scan.problems.push_back(device.status().message());
      }
      continue;
    }
    if (device->vendor != kNvidiaVendorId || (device->classCode >> 16) != 0x03) continue;

    GpuInfo gpu;
    gpu.index = static_cast<int>(scan.gpus.size());
    gpu.pci = std::move(device).value();
    gpu.bar1Bytes = gpu.pci.barBytes.size() > 1 ? gpu.pci.barBytes[1] : 0;
    const std::string procDir = "/proc/driver/nvidia/gpus/" + address;
    if (auto information = root.readText(procDir + "/information"); information.isOk()) {
      gpu.driverBound = true;
      gpu.model = informationField(*information, "Model");
    }
    if (auto memory = root.readLine(procDir + "/kvx-memory-bytes"); memory.isOk()) {
      gpu.memoryBytes = parseDecimal(*memory);
    }
    scan.gpus.push_back(std::move(gpu));
  }
  return scan;
}

}  // namespace kvx::doctor
