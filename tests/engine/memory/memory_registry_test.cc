// kvx-test-labels: unit
#include "engine/memory/memory_registry.h"

#include <catch2/catch.hpp>
#include <vector>

#include "engine/transport/transport_registry.h"

using namespace kvx;
using namespace kvx::engine;

namespace {

struct Fixture {
  std::unique_ptr<Transport> transport = std::move(createTransport("inproc", {}).value());
  MemoryRegistry registry{*transport};
  std::vector<std::uint8_t> buffer = std::vector<std::uint8_t>(1 << 16);

  MemoryRegionSpec spec(const std::string& name, std::size_t offset, std::size_t length) {
    return MemoryRegionSpec{name, buffer.data() + offset, length};
  }
};

}  // namespace

TEST_CASE("registry assigns ids and rejects overlaps and duplicate names", "[registry]") {
  Fixture f;
  auto a = f.registry.add(f.spec("a", 0, 4096));
  REQUIRE(a.isOk());
  auto b = f.registry.add(f.spec("b", 4096, 4096));
  REQUIRE(b.isOk());
  CHECK(a->value != b->value);

  auto overlap = f.registry.add(f.spec("c", 1000, 200));
  REQUIRE_FALSE(overlap.isOk());
  CHECK(overlap.status().code() == StatusCode::kAlreadyExists);
  CHECK_THAT(overlap.status().message(), Catch::Contains("overlaps registered region 'a'"));

  auto sameName = f.registry.add(f.spec("a", 10000, 100));
  CHECK(sameName.status().code() == StatusCode::kAlreadyExists);

  CHECK(f.registry.add(f.spec("zero", 20000, 0)).status().code() == StatusCode::kInvalidArgument);
  CHECK(f.registry.add(MemoryRegionSpec{"null", nullptr, 10}).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(f.registry.size() == 2);
}

TEST_CASE("host memory that names a device is refused", "[registry]") {
  Fixture f;
  MemoryRegionSpec spec = f.spec("host", 0, 4096);
  spec.device = 5;
  auto region = f.registry.add(spec);
  REQUIRE_FALSE(region.isOk());
  CHECK(region.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(region.status().message(),
             Catch::Contains("host region 'host' names device 5; host memory takes device -1"));
  spec.device = -1;
  CHECK(f.registry.add(spec).isOk());
}

TEST_CASE("registry bounds-checks descriptors with a message naming the range", "[registry]") {
  Fixture f;
  RegionId id = f.registry.add(f.spec("kv.layer3", 0, 32768)).value();
  CHECK(f.registry.resolve(MemoryRange{id, 0, 32768}, 0, "local").isOk());
  CHECK(f.registry.resolve(MemoryRange{id, 32767, 1}, 0, "local").isOk());

  auto past = f.registry.resolve(MemoryRange{id, 32768 - 100, 65536}, 17, "local");
  REQUIRE_FALSE(past.isOk());
  CHECK(past.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(past.status().message(), Catch::Contains("descriptor 17 (local)"));
  CHECK_THAT(past.status().message(), Catch::Contains("exceeds region 'kv.layer3'"));
  CHECK_THAT(past.status().message(), Catch::Contains("+65536)"));

  CHECK(f.registry.resolve(MemoryRange{id, UINT64_MAX, 2}, 0, "local").status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(f.registry.resolve(MemoryRange{id, 0, 0}, 0, "local").status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(f.registry.resolve(MemoryRange{RegionId(999), 0, 1}, 3, "local").status().code() ==
        StatusCode::kNotFound);
}

TEST_CASE("deregistration removes a region and is refused while pinned", "[registry]") {
  Fixture f;
  RegionId id = f.registry.add(f.spec("r", 0, 4096)).value();
  auto region = f.registry.find(id).value();
  std::vector<std::shared_ptr<LocalRegion>> regions{region};

  REQUIRE(f.registry.pin(regions).isOk());
  Status busy = f.registry.remove(id);
  CHECK(busy.code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(busy.message(), Catch::Contains("1 pending transfer"));
  f.registry.unpin(regions);

  CHECK(f.registry.remove(id).isOk());
  CHECK(region->deregistered.load());
  CHECK(f.registry.find(id).status().code() == StatusCode::kNotFound);
  CHECK(f.registry.remove(id).code() == StatusCode::kNotFound);
  // A transfer that still holds the region cannot pin it any more.
  CHECK(f.registry.pin(regions).code() == StatusCode::kFailedPrecondition);
  // The range is free again and the id is not reused.
  auto again = f.registry.add(f.spec("r", 0, 4096));
  REQUIRE(again.isOk());
  CHECK(again->value != id.value);
}

TEST_CASE("allocated regions are usable and listed when exposed", "[registry]") {
  Fixture f;
  auto allocated = f.registry.allocate(AllocationSpec{"pool", 8192});
  REQUIRE(allocated.isOk());
  CHECK(allocated->address != nullptr);
  static_cast<std::uint8_t*>(allocated->address)[8191] = 7;
  REQUIRE(
      f.registry.add(MemoryRegionSpec{"hidden", f.buffer.data(), 100, MemoryKind::kHost, -1, false})
          .isOk());
  auto exposed = f.registry.exposedRegions();
  REQUIRE(exposed.size() == 1);
  CHECK(exposed[0]->info.name == "pool");
  CHECK(!exposed[0]->memory->packedRemoteKey().empty());
}

TEST_CASE("host memory declared as CUDA memory is refused at registration", "[registry]") {
  Fixture f;
  MemoryRegionSpec spec = f.spec("kv", 0, 4096);
  spec.kind = MemoryKind::kCuda;
  spec.device = 0;
  auto id = f.registry.add(spec);
  REQUIRE_FALSE(id.isOk());
  INFO(id.status().toString());
  // With CUDA compiled in the probe finds host memory; without it, CUDA memory cannot be
  // registered at all. Either way the message names the region.
  CHECK((id.status().code() == StatusCode::kFailedPrecondition ||
         id.status().code() == StatusCode::kUnimplemented));
  CHECK_THAT(id.status().message(), Catch::Contains("region 'kv'"));
  CHECK(f.registry.add(f.spec("kv", 0, 4096)).isOk());  // declared right, it registers
}

TEST_CASE("host memory beyond what the host can give is refused, unpopulated regions counted",
          "[registry]") {
  Fixture f;
  constexpr std::uint64_t kMiB = 1u << 20;
  // A host with 10 MiB available, whatever this machine has.
  f.registry.setHostRoomReader([] {
    return HostMemoryRoom{10 * kMiB, std::nullopt, std::nullopt};
  });
  const Status tooLarge = f.registry.allocate(AllocationSpec{"huge", 11 * kMiB}).status();
  CHECK(tooLarge.code() == StatusCode::kResourceExhausted);
  CHECK_THAT(tooLarge.message(),
             Catch::Contains("allocating region 'huge'") && Catch::Contains("(MemAvailable)"));

  // Unpopulated regions do not lower MemAvailable: they are counted, so that a pool of many
  // regions cannot together exceed the host (--no-populate).
  auto first =
      f.registry.allocate(AllocationSpec{"a", 6 * kMiB, MemoryKind::kHost, -1, true, false});
  REQUIRE(first.isOk());
  const Status second =
      f.registry.allocate(AllocationSpec{"b", 6 * kMiB, MemoryKind::kHost, -1, true, false})
          .status();
  CHECK(second.code() == StatusCode::kResourceExhausted);
  CHECK_THAT(second.message(),
             Catch::Contains(std::to_string(6 * kMiB) +
                             " for regions allocated earlier and not populated yet"));
  // Removing the first gives its room back.
  REQUIRE(f.registry.remove(first->id).isOk());
  CHECK(f.registry.allocate(AllocationSpec{"b", 6 * kMiB, MemoryKind::kHost, -1, true, false})
            .isOk());
}
