#define CATCH_CONFIG_MAIN
#include <atomic>
#include <catch2/catch.hpp>

#include "tests/support/failed_assertions.h"

namespace {

std::atomic<std::size_t> failures{0};

// Counts failed assertions, for kvx::test::failedAssertions().
struct FailureCounter : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  bool assertionEnded(const Catch::AssertionStats& stats) override {
    if (!stats.assertionResult.isOk()) failures.fetch_add(1);
    return true;
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(FailureCounter)

namespace kvx::test {

std::size_t failedAssertions() { return failures.load(); }

}  // namespace kvx::test
