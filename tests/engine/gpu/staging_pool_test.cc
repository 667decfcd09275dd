// kvx-test-labels: unit
#include "engine/gpu/staging_pool.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <set>

using namespace kvx;
using namespace kvx::engine::gpu;

namespace {

// Counts what it hands out; fails after `limit` allocations.
class CountingAllocator final : public StagingAllocator {
 public:
  explicit CountingAllocator(int limit) : limit_(limit) {}
  Result<void*> allocate(std::size_t bytes) override {
    if (live_ >= limit_) return resourceExhausted("test allocator exhausted");
    ++live_;
    return host_.allocate(bytes);
  }
  void release(void* address) override {
    --live_;
    host_.release(address);
  }
  std::string describe() const override { return "counting memory"; }
  int live() const { return live_; }

 private:
  HostStagingAllocator host_;
  int limit_;
  int live_ = 0;
};

}  // namespace

TEST_CASE("a staging pool holds N distinct aligned buffers and returns them", "[staging]") {
  auto allocator = std::make_shared<CountingAllocator>(100);
  {
    auto pool = StagingPool::create(allocator, 4, 65536);
    REQUIRE(pool.isOk());
    CHECK((*pool)->count() == 4);
    CHECK((*pool)->chunkBytes() == 65536);
    CHECK((*pool)->describe() == "4 x 65536 bytes of counting memory");
    std::set<std::byte*> distinct;
    for (std::size_t i = 0; i < 4; ++i) {
      std::byte* buffer = (*pool)->buffer(i);
      CHECK(reinterpret_cast<std::uintptr_t>(buffer) % 4096 == 0);
      std::memset(buffer, 0xee, 65536);  // writable over the whole chunk
      distinct.insert(buffer);
    }
    CHECK(distinct.size() == 4);
    CHECK(allocator->live() == 4);
    CHECK((*pool)->acquire());
    CHECK_FALSE((*pool)->acquire());
    (*pool)->releaseToPool();
    CHECK((*pool)->acquire());
  }
  CHECK(allocator->live() == 0);
}

TEST_CASE("a staging pool refuses zero sizes and gives back what it got when memory runs out",
          "[staging]") {
  auto allocator = std::make_shared<CountingAllocator>(2);
  CHECK(StagingPool::create(allocator, 0, 4096).status().code() == StatusCode::kInvalidArgument);
  CHECK(StagingPool::create(allocator, 2, 0).status().code() == StatusCode::kInvalidArgument);
  auto pool = StagingPool::create(allocator, 3, 4096);
  REQUIRE_FALSE(pool.isOk());
  CHECK(pool.status().code() == StatusCode::kResourceExhausted);
  CHECK_THAT(pool.status().message(), Catch::Contains("staging buffer 2 of 3"));
  CHECK(allocator->live() == 0);
}
