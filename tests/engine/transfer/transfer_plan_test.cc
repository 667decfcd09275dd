// kvx-test-labels: unit
#include "engine/transfer/transfer_plan.h"

#include <catch2/catch.hpp>

#include "engine/transport/transport_registry.h"

using namespace kvx;
using namespace kvx::engine;

namespace {

struct Regions {
  std::unique_ptr<Transport> transport = std::move(createTransport("inproc", {}).value());
  std::vector<std::uint8_t> buffer = std::vector<std::uint8_t>(1 << 20);
  std::shared_ptr<LocalRegion> local = makeLocal(0, 1 << 19);
  std::shared_ptr<LocalRegion> local2 = makeLocal(1 << 19, 1 << 19);
  std::shared_ptr<RemoteRegion> remote = makeRemote(1, 0x100000, 1 << 20);
  std::shared_ptr<RemoteRegion> remote2 = makeRemote(2, 0x900000, 1 << 20);

  std::shared_ptr<LocalRegion> makeLocal(std::size_t offset, std::size_t length) {
    auto r = std::make_shared<LocalRegion>();
    r->memory = std::move(
        transport->registerMemory(buffer.data() + offset, length, MemoryKind::kHost, -1).value());
    r->info.length = length;
    return r;
  }
  static std::shared_ptr<RemoteRegion> makeRemote(std::uint64_t id, std::uint64_t address,
                                                  std::uint64_t length) {
    auto r = std::make_shared<RemoteRegion>();
    r->info.id = RegionId(id);
    r->info.address = address;
    r->info.length = length;
    return r;
  }
};

}  // namespace

TEST_CASE("adjacent descriptors coalesce into one operation", "[plan]") {
  Regions r;
  PlanBuilder b(0);
  for (int i = 0; i < 16; ++i) b.add(r.local, i * 4096, r.remote, i * 4096, 4096);
  TransferPlan plan = std::move(b).finish();
  CHECK(plan.descriptors == 16);
  CHECK(plan.bytes == 16 * 4096);
  REQUIRE(plan.ops.size() == 1);
  CHECK(plan.ops[0].length == 16 * 4096);
  CHECK(plan.ops[0].local == r.local->base());
  CHECK(plan.ops[0].remoteAddress == 0x100000);
  CHECK(plan.localRegions.size() == 1);
  CHECK(plan.remoteRegions.size() == 1);
}

TEST_CASE("a gap on either side breaks coalescing", "[plan]") {
  Regions r;
  PlanBuilder b(0);
  b.add(r.local, 0, r.remote, 0, 4096);
  b.add(r.local, 4096, r.remote, 8192, 4096);    // remote gap
  b.add(r.local, 12288, r.remote, 12288, 4096);  // local gap
  b.add(r.local, 16384, r.remote, 16384, 4096);  // continues the previous one
  TransferPlan plan = std::move(b).finish();
  REQUIRE(plan.ops.size() == 3);
  CHECK(plan.ops[2].length == 8192);
}

TEST_CASE("reversed order does not coalesce", "[plan]") {
  Regions r;
  PlanBuilder b(0);
  b.add(r.local, 4096, r.remote, 4096, 4096);
  b.add(r.local, 0, r.remote, 0, 4096);
  CHECK(std::move(b).finish().ops.size() == 2);
}

TEST_CASE("different regions never coalesce even when addresses touch", "[plan]") {
  Regions r;
  PlanBuilder b(0);
  b.add(r.local, (1 << 19) - 4096, r.remote, 0, 4096);
  b.add(r.local2, 0, r.remote, 4096, 4096);  // local2 starts where local ends
  b.add(r.local2, 4096, r.remote2, 0, 4096);
  TransferPlan plan = std::move(b).finish();
  CHECK(plan.ops.size() == 3);
  CHECK(plan.localRegions.size() == 2);
  REQUIRE(plan.remoteRegions.size() == 2);
  CHECK(plan.ops[2].remoteSlot == 1);
}

TEST_CASE("operations are split at the maximum size and coalescing respects it", "[plan]") {
  Regions r;
  PlanBuilder big(10000);
  big.add(r.local, 0, r.remote, 0, 25000);
  TransferPlan plan = std::move(big).finish();
  REQUIRE(plan.ops.size() == 3);
  CHECK(plan.ops[0].length == 10000);
  CHECK(plan.ops[1].length == 10000);
  CHECK(plan.ops[2].length == 5000);
  CHECK(plan.ops[2].remoteAddress == 0x100000 + 20000);

  PlanBuilder merge(10000);
  for (int i = 0; i < 5; ++i) merge.add(r.local, i * 4000, r.remote, i * 4000, 4000);
  TransferPlan merged = std::move(merge).finish();
  REQUIRE(merged.ops.size() == 2);
  CHECK(merged.ops[0].length == 10000);
  CHECK(merged.ops[1].length == 10000);
  CHECK(merged.bytes == 20000);
}

TEST_CASE("staged segments become staged operations, apart from the direct ones", "[plan]") {
  Regions r;
  r.local2->info.kind = MemoryKind::kCuda;
  r.local2->info.device = 3;
  PlanBuilder b(0);
  b.add(r.local, 0, r.remote, 0, 4096);
  b.add(r.local2, 0, r.remote, 4096, 4096, DataPath::kStagedLocal);
  b.add(r.local2, 4096, r.remote, 8192, 100, DataPath::kStagedLocal);  // coalesces
  b.add(r.local, 4096, r.remote2, 0, 10);
  TransferPlan plan = std::move(b).finish();
  CHECK(plan.descriptors == 4);
  CHECK(plan.bytes == 4096 + 4096 + 100 + 10);
  REQUIRE(plan.ops.size() == 2);
  REQUIRE(plan.stagedOps.size() == 1);
  CHECK(plan.stagedOps[0].local == r.local2->base());
  CHECK(plan.stagedOps[0].length == 4196);
  CHECK(plan.stagedOps[0].remoteAddress == 0x100000 + 4096);
  CHECK(plan.stagedBytes == 4196);
  CHECK(plan.stagedDevice == 3);
  CHECK(plan.localRegions.size() == 2);  // staged regions are pinned like the others
}

TEST_CASE("segments through the peer's staging window are kept apart by local side", "[plan]") {
  Regions r;
  r.local2->info.kind = MemoryKind::kCuda;
  r.local2->info.device = 1;
  PlanBuilder b(0);
  b.add(r.local, 0, r.remote, 0, 4096, DataPath::kStagedRemote);
  b.add(r.local, 4096, r.remote, 4096, 100, DataPath::kStagedRemote);  // coalesces
  b.add(r.local2, 0, r.remote, 8192, 2048, DataPath::kStagedBoth);
  b.add(r.local, 0, r.remote2, 0, 10);
  TransferPlan plan = std::move(b).finish();
  CHECK(plan.bytes == 4096 + 100 + 2048 + 10);
  REQUIRE(plan.ops.size() == 1);
  REQUIRE(plan.remoteStagedOps.size() == 1);
  CHECK(plan.remoteStagedOps[0].length == 4196);
  REQUIRE(plan.bothStagedOps.size() == 1);
  CHECK(plan.bothStagedOps[0].remoteAddress == 0x100000 + 8192);
  CHECK(plan.stagedOps.empty());
  CHECK(plan.remoteStagedBytes == 4196 + 2048);
  CHECK(plan.stagedBytes == 2048);  // staged on this side too
  CHECK(plan.stagedDevice == 1);
}
