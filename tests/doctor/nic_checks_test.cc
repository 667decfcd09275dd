// kvx-test-labels: unit serial
#include "doctor/nic_checks.h"

#include <catch2/catch.hpp>

#include "tests/doctor/fixture_tree.h"

using namespace kvx;
using namespace kvx::doctor;
using kvx::doctor::testing::fixtureFacts;

TEST_CASE("rdma: every NIC up", "[doctor]") {
  const CheckResult result = checkRdma(fixtureFacts("dgx-h100"));
  CHECK(result.id == "rdma");
  CHECK(result.state == CheckState::kOk);
  CHECK(result.found == "8 RDMA device(s), 8 with an ACTIVE port");
  CHECK_THAT(result.details[0],
             Catch::Contains("mlx5_0 (0000:19:00.0, NUMA node 0): port 1 ACTIVE, 400 Gb/sec"));
}

TEST_CASE("rdma: every port down fails, some down warns", "[doctor]") {
  const CheckResult down = checkRdma(fixtureFacts("port-down"));
  CHECK(down.state == CheckState::kFailed);
  CHECK_THAT(down.fix, Catch::Contains("subnet manager"));

  SystemFacts some = fixtureFacts("dgx-h100");
  some.nics.nics[2].ports[0].state = "DOWN";
  CHECK(checkRdma(some).state == CheckState::kWarning);
}

TEST_CASE("rdma: a RoCE port without a GID warns", "[doctor]") {
  SystemFacts facts = fixtureFacts("dgx-h100");
  facts.nics.nics[0].ports[0].linkLayer = "Ethernet";
  facts.nics.nics[0].ports[0].gid0 = "0000:0000:0000:0000:0000:0000:0000:0000";
  const CheckResult result = checkRdma(facts);
  CHECK(result.state == CheckState::kWarning);
  CHECK_THAT(result.fix, Catch::Contains("IP address"));
}

TEST_CASE("rdma: none fails next to GPUs, is n/a without them", "[doctor]") {
  const CheckResult noRdma = checkRdma(fixtureFacts("no-rdma"));
  CHECK(noRdma.state == CheckState::kFailed);
  CHECK_THAT(noRdma.found, Catch::StartsWith("no RDMA device"));
  CHECK(checkRdma(fixtureFacts("bare")).state == CheckState::kNotApplicable);
  CHECK(checkRdma(fixtureFacts("no-gpu")).state == CheckState::kOk);
}

TEST_CASE("rdma: libibverbs' answer is shown beside sysfs", "[doctor]") {
  SystemFacts facts = fixtureFacts("bare");
  facts.verbs = Result<std::vector<std::string>>(unimplemented(
      "ibv_get_device_list failed: Function not implemented (errno 38): no RDMA support"));
  CHECK_THAT(checkRdma(facts).details.back(), Catch::StartsWith("libibverbs: ibv_get_device_list"));

  SystemFacts listed = fixtureFacts("dgx-h100");
  listed.verbs = Result<std::vector<std::string>>(std::vector<std::string>{"mlx5_0", "rxe0"});
  CHECK(checkRdma(listed).details.back() ==
        "libibverbs: 2 device(s) mlx5_0 rxe0 (not in /sys/class/infiniband)");
}
