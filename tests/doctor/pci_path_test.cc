// kvx-test-labels: unit serial
#include "doctor/pci_path.h"

#include <catch2/catch.hpp>

#include "tests/doctor/fixture_tree.h"

using namespace kvx::doctor;
using kvx::doctor::testing::fixtureRoot;

namespace {

PciDevice device(const SystemRoot& root, const char* address) {
  auto read = readPciDevice(root, address);
  REQUIRE(read.isOk());
  return std::move(read).value();
}

// A device under `nodes` (host bridge first), on `numa`.
PciDevice synthetic(std::vector<std::string> nodes, int numa) {
  PciDevice d;
  d.numaNode = numa;
  std::string path = "/sys/devices";
  for (const auto& name : nodes) {
    path += "/" + name;
    d.upstream.push_back({name, path, name.rfind("pci", 0) == 0});
  }
  return d;
}

}  // namespace

TEST_CASE("a GPU and the NIC behind its PCIe switch", "[doctor]") {
  const SystemRoot root = fixtureRoot("dgx-h100");
  const PciPath path = classifyPciPath(device(root, "0000:18:00.0"), device(root, "0000:19:00.0"));
  CHECK(path.kind == PciPathKind::kSameSwitch);
  CHECK(path.via == "0000:16:00.0");
  REQUIRE(path.bridges.size() == 2);  // the two downstream ports
  CHECK(path.bridges[0].name == "0000:17:00.0");
  CHECK(path.bridges[1].name == "0000:17:01.0");
}

TEST_CASE("a GPU and a NIC of another root complex on the same socket", "[doctor]") {
  const SystemRoot root = fixtureRoot("dgx-h100");
  const PciPath path = classifyPciPath(device(root, "0000:18:00.0"), device(root, "0000:39:00.0"));
  CHECK(path.kind == PciPathKind::kDifferentRootComplexes);
  CHECK(path.via.empty());
  CHECK(path.bridges.size() == 6);
}

TEST_CASE("a GPU and a NIC on the other socket", "[doctor]") {
  const SystemRoot root = fixtureRoot("dgx-h100");
  const PciPath path = classifyPciPath(device(root, "0000:18:00.0"), device(root, "0000:99:00.0"));
  CHECK(path.kind == PciPathKind::kAcrossSockets);
}

TEST_CASE("only the host bridge shared is the same root complex", "[doctor]") {
  const PciPath path = classifyPciPath(synthetic({"pci0000:00", "0000:00:01.0"}, 0),
                                       synthetic({"pci0000:00", "0000:00:02.0"}, 0));
  CHECK(path.kind == PciPathKind::kSameRootComplex);
  CHECK(path.via == "pci0000:00");
  CHECK(path.bridges.size() == 2);
}

TEST_CASE("unknown NUMA nodes do not make a pair cross sockets", "[doctor]") {
  const PciPath path = classifyPciPath(synthetic({"pci0000:00"}, -1), synthetic({"pci0000:80"}, 1));
  CHECK(path.kind == PciPathKind::kDifferentRootComplexes);
}

TEST_CASE("path kinds have stable names", "[doctor]") {
  CHECK(toString(PciPathKind::kSameSwitch) == "same-switch");
  CHECK(toString(PciPathKind::kSameRootComplex) == "same-root-complex");
  CHECK(toString(PciPathKind::kDifferentRootComplexes) == "different-root-complexes");
  CHECK(toString(PciPathKind::kAcrossSockets) == "across-sockets");
  CHECK(describe(PciPathKind::kSameSwitch) == "same PCIe switch");
  CHECK(describe(PciPathKind::kAcrossSockets) == "across sockets");
}
