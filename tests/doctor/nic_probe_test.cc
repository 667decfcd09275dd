// kvx-test-labels: unit serial
#include "doctor/nic_probe.h"

#include <catch2/catch.hpp>

#include "tests/doctor/fixture_tree.h"

using namespace kvx::doctor;
using kvx::doctor::testing::fixtureRoot;
using kvx::doctor::testing::TempTree;

TEST_CASE("a DGX-H100-like node: 8 NICs with their PCI functions and ports", "[doctor]") {
  const NicScan scan = probeNics(fixtureRoot("dgx-h100"));
  CHECK(scan.problems.empty());
  REQUIRE(scan.nics.size() == 8);
  const RdmaNic& nic = scan.nics[0];
  CHECK(nic.name == "mlx5_0");
  REQUIRE(nic.pci);
  CHECK(nic.pci->address == "0000:19:00.0");
  CHECK(nic.pci->numaNode == 0);
  CHECK(nic.pci->vendor == 0x15b3);
  REQUIRE(nic.ports.size() == 1);
  CHECK(nic.ports[0].number == 1);
  CHECK(nic.ports[0].state == "ACTIVE");
  CHECK(nic.ports[0].active());
  CHECK(nic.ports[0].rate == "400 Gb/sec (4X NDR)");
  CHECK(nic.ports[0].linkLayer == "InfiniBand");
  CHECK(nic.ports[0].gid0 == "fe80:0000:0000:0000:a088:c203:0000:1f2e");
  CHECK_FALSE(nic.ports[0].gidUnset());
  CHECK(nic.anyPortActive());
  CHECK(scan.nics[7].pci->numaNode == 1);
}

TEST_CASE("a port that is down", "[doctor]") {
  const NicScan scan = probeNics(fixtureRoot("port-down"));
  REQUIRE(scan.nics.size() == 1);
  CHECK(scan.nics[0].ports[0].state == "DOWN");
  CHECK_FALSE(scan.nics[0].anyPortActive());
}

TEST_CASE("no RDMA device", "[doctor]") {
  CHECK(probeNics(fixtureRoot("no-rdma")).nics.empty());
  CHECK(probeNics(fixtureRoot("bare")).nics.empty());
}

TEST_CASE("a soft device without PCI function, ports sorted by number", "[doctor]") {
  TempTree tree;
  tree.write("/sys/class/infiniband/rxe0/ports/2/state", "1: DOWN\n");
  tree.write("/sys/class/infiniband/rxe0/ports/1/state", "4: ACTIVE\n");
  tree.write("/sys/class/infiniband/rxe0/ports/1/link_layer", "Ethernet\n");
  tree.write("/sys/class/infiniband/rxe0/ports/1/gids/0",
             "0000:0000:0000:0000:0000:0000:0000:0000\n");
  const NicScan scan = probeNics(SystemRoot(tree.path()));
  REQUIRE(scan.nics.size() == 1);
  CHECK_FALSE(scan.nics[0].pci);
  REQUIRE(scan.nics[0].ports.size() == 2);
  CHECK(scan.nics[0].ports[0].number == 1);
  CHECK(scan.nics[0].ports[0].gidUnset());
  CHECK(scan.nics[0].ports[1].state == "DOWN");
  CHECK(scan.nics[0].ports[1].rate.empty());
}
