// kvx-test-labels: unit serial
#include "kvx/tp_plan.h"

#include <catch2/catch.hpp>

using namespace kvx;

namespace {

TpPlan plan(std::uint32_t size, std::uint32_t rank, std::uint32_t decodeSize) {
  auto made = makeTpPlan(8, false, size, rank, decodeSize);
  REQUIRE(made.isOk());
  return *made;
}

}  // namespace

TEST_CASE("a rank holds its share of the model's heads", "[tensor_parallel]") {
  CHECK(plan(1, 0, 1).heads().first == 0);
  CHECK(plan(1, 0, 1).heads().count == 8);
  CHECK(plan(4, 3, 1).heads().first == 6);
  CHECK(plan(4, 3, 1).heads().count == 2);
  CHECK_FALSE(plan(1, 0, 1).sliced());
  CHECK(plan(2, 0, 1).sliced());
  CHECK(plan(1, 0, 2).sliced());
}

TEST_CASE("TP sizes must split the heads and ranks lie in their group", "[tensor_parallel]") {
  auto fails = [](Result<TpPlan> made, const std::string& text) {
    REQUIRE_FALSE(made.isOk());
    CHECK(made.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(made.status().message(), Catch::Contains(text));
  };
  fails(makeTpPlan(8, false, 3, 0, 1), "--tp-size 3 does not divide the model's 8 KV heads");
  fails(makeTpPlan(8, false, 2, 0, 16), "--decode-tp 16 does not divide");
  fails(makeTpPlan(8, false, 2, 2, 1), "--tp-rank 2 is not a rank of a group of --tp-size 2");
  fails(makeTpPlan(8, false, 0, 0, 1), "--tp-size must be at least 1");
  fails(makeTpPlan(1, true, 2, 0, 1), "MLA");
  CHECK(makeTpPlan(1, true, 1, 0, 1).isOk());
}

TEST_CASE("a prefill rank sends one part per decode rank it overlaps", "[tensor_parallel]") {
  SECTION("equal sizes: one part, same heads") {
    const auto parts = slicePlan(plan(2, 1, 2), "p-0");
    REQUIRE(parts.size() == 1);
    CHECK(parts[0].decodeRank == 1);
    CHECK(parts[0].slice.sourceFirstHead == 0);
    CHECK(parts[0].slice.destinationFirstHead == 0);
    CHECK(parts[0].slice.heads == 4);
    CHECK(parts[0].slice.sources == 1);
    CHECK(parts[0].slice.destinationId == "p-0");
  }
  SECTION("scatter: prefill TP2 rank 1 (heads 4-7) to decode TP4 ranks 2 and 3") {
    const auto parts = slicePlan(plan(2, 1, 4), "p-0");
    REQUIRE(parts.size() == 2);
    CHECK(parts[0].decodeRank == 2);
    CHECK(parts[0].slice.sourceFirstHead == 0);
    CHECK(parts[0].slice.destinationFirstHead == 0);
    CHECK(parts[0].slice.heads == 2);
    CHECK(parts[1].decodeRank == 3);
    CHECK(parts[1].slice.sourceFirstHead == 2);
    CHECK(parts[1].slice.heads == 2);
    for (const SlicePart& p : parts) CHECK(p.slice.sources == 1);
  }
  SECTION("gather: prefill TP4 rank 3 (heads 6-7) into decode TP2 rank 1 with rank 2") {
    const auto parts = slicePlan(plan(4, 3, 2), "p-0");
    REQUIRE(parts.size() == 1);
    CHECK(parts[0].decodeRank == 1);
    CHECK(parts[0].slice.sourceFirstHead == 0);
    CHECK(parts[0].slice.destinationFirstHead == 2);
    CHECK(parts[0].slice.heads == 2);
    CHECK(parts[0].slice.sources == 2);
  }
  SECTION("TP1 to TP8: eight one-head parts") {
    const auto parts = slicePlan(plan(1, 0, 8), "p-0");
    REQUIRE(parts.size() == 8);
    for (std::uint32_t q = 0; q < 8; ++q) {
      CHECK(parts[q].slice.sourceFirstHead == q);
      CHECK(parts[q].slice.heads == 1);
    }
  }
  SECTION("every decode head is sent exactly once by the prefill group") {
    for (const auto& [p, d] : {std::pair{1u, 8u}, {2u, 4u}, {4u, 2u}, {8u, 1u}, {8u, 8u}}) {
      std::vector<int> filled(8, 0);
      for (std::uint32_t r = 0; r < p; ++r) {
        const TpPlan prefill = plan(p, r, d);
        for (const SlicePart& part : slicePlan(prefill, "x")) {
          const std::uint32_t decodeFirst = prefill.headsOf(d, part.decodeRank).first;
          CHECK(part.slice.sources == std::max(1u, p / d));
          for (std::uint32_t h = 0; h < part.slice.heads; ++h) {
            ++filled[decodeFirst + part.slice.destinationFirstHead + h];
            CHECK(prefill.heads().first + part.slice.sourceFirstHead + h ==
                  decodeFirst + part.slice.destinationFirstHead + h);
          }
        }
      }
      CHECK(filled == std::vector<int>(8, 1));
    }
  }
  CHECK(partId("prompt-4", 3) == "prompt-4@d3");
}
