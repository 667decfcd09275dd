// kvx-test-labels: unit serial
#include "doctor/check_result.h"

#include <catch2/catch.hpp>

using namespace kvx::doctor;

TEST_CASE("check states have stable names and an order of gravity", "[doctor]") {
  CHECK(toString(CheckState::kOk) == "ok");
  CHECK(toString(CheckState::kWarning) == "warning");
  CHECK(toString(CheckState::kFailed) == "failed");
  CHECK(toString(CheckState::kUnknown) == "unknown");
  CHECK(toString(CheckState::kNotApplicable) == "n/a");

  CHECK(worse(CheckState::kNotApplicable, CheckState::kOk) == CheckState::kOk);
  CHECK(worse(CheckState::kOk, CheckState::kUnknown) == CheckState::kUnknown);
  CHECK(worse(CheckState::kWarning, CheckState::kUnknown) == CheckState::kWarning);
  CHECK(worse(CheckState::kWarning, CheckState::kFailed) == CheckState::kFailed);
  CHECK(worse(CheckState::kFailed, CheckState::kOk) == CheckState::kFailed);
}
