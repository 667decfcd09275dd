// kvx-test-labels: unit serial
#include "doctor/system_root.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "tests/doctor/fixture_tree.h"

using namespace kvx;
using namespace kvx::doctor;
using kvx::doctor::testing::TempTree;

TEST_CASE("system paths are read under the root", "[doctor]") {
  TempTree tree;
  tree.write("/proc/cmdline", "  ro quiet iommu=pt \nsecond line\n");
  const SystemRoot root(tree.path());
  CHECK_FALSE(root.isRealRoot());
  CHECK(root.hostPath("/proc/cmdline") == tree.path() / "proc/cmdline");
  CHECK(root.exists("/proc/cmdline"));
  CHECK_FALSE(root.exists("/proc/modules"));
  CHECK(root.readText("/proc/cmdline").value() == "  ro quiet iommu=pt \nsecond line\n");
  CHECK(root.readLine("/proc/cmdline").value() == "ro quiet iommu=pt");
}

TEST_CASE("a missing file is NOT_FOUND and names the host path", "[doctor]") {
  TempTree tree;
  const SystemRoot root(tree.path());
  auto text = root.readLine("/proc/driver/nvidia/version");
  REQUIRE_FALSE(text.isOk());
  CHECK(text.status().code() == StatusCode::kNotFound);
  CHECK_THAT(text.status().message(), Catch::Contains("proc/driver/nvidia/version"));
}

TEST_CASE("list returns sorted names, and nothing for a missing directory", "[doctor]") {
  TempTree tree;
  tree.write("/sys/class/infiniband/mlx5_1/x", "");
  tree.write("/sys/class/infiniband/mlx5_0/x", "");
  const SystemRoot root(tree.path());
  CHECK(root.list("/sys/class/infiniband") == std::vector<std::string>{"mlx5_0", "mlx5_1"});
  CHECK(root.list("/sys/class/iommu").empty());
}

TEST_CASE("resolve follows relative symlinks and answers a system path", "[doctor]") {
  TempTree tree;
  tree.write("/sys/devices/pci0000:15/0000:15:01.0/vendor", "0x8086\n");
  tree.link("/sys/bus/pci/devices/0000:15:01.0", "../../../devices/pci0000:15/0000:15:01.0");
  const SystemRoot root(tree.path());
  CHECK(root.resolve("/sys/bus/pci/devices/0000:15:01.0").value() ==
        "/sys/devices/pci0000:15/0000:15:01.0");
  CHECK(root.readLine("/sys/bus/pci/devices/0000:15:01.0/vendor").value() == "0x8086");
}

TEST_CASE("resolve refuses a link that leaves the root", "[doctor]") {
  TempTree tree;
  tree.link("/sys/bus/pci/devices/0000:00:00.0", "/tmp");
  const SystemRoot root(tree.path());
  auto resolved = root.resolve("/sys/bus/pci/devices/0000:00:00.0");
  REQUIRE_FALSE(resolved.isOk());
  CHECK_THAT(resolved.status().message(), Catch::Contains("outside the root"));
  CHECK_FALSE(root.resolve("/sys/bus/pci/devices/missing").isOk());
}

TEST_CASE("\"/\" is the real root", "[doctor]") {
  const SystemRoot root("/");
  CHECK(root.isRealRoot());
  CHECK(root.hostPath("/proc/cmdline") == "/proc/cmdline");
}

TEST_CASE("a file too large for a system file is refused, not read", "[doctor]") {
  // A 1 GB proc/cmdline in a --root tree took 57 s and 12.8 GB of memory.
  TempTree tree;
  tree.write("/proc/cmdline", "");
  REQUIRE(::truncate((tree.path() / "proc/cmdline").c_str(), 1ll << 30) == 0);
  const SystemRoot root(tree.path());
  auto text = root.readText("/proc/cmdline");
  REQUIRE_FALSE(text.isOk());
  CHECK(text.status().code() == StatusCode::kNotFound);
  CHECK_THAT(text.status().message(),
             Catch::Contains("proc/cmdline") && Catch::Contains("holds 1073741824 bytes"));
}

TEST_CASE("a FIFO where a system file should be is refused, not waited on", "[doctor]") {
  TempTree tree;
  tree.write("/proc/placeholder", "");
  REQUIRE(::mkfifo((tree.path() / "proc/cmdline").c_str(), 0600) == 0);
  const SystemRoot root(tree.path());
  auto text = root.readLine("/proc/cmdline");
  REQUIRE_FALSE(text.isOk());
  CHECK(text.status().code() == StatusCode::kNotFound);
  CHECK_THAT(text.status().message(), Catch::Contains("is a FIFO, not a regular file"));
}
