#include "doctor/check_result.h"

namespace kvx::doctor {

std::string_view toString(CheckState state) {
  switch (state) {
    case CheckState::kOk: return "ok";
    case CheckState::kWarning: return "warning";
    case CheckState::kFailed: return "failed";
    case CheckState::kUnknown: return "unknown";
    case CheckState::kNotApplicable: return "n/a";
  }
  return "unknown";
}

CheckState worse(CheckState a, CheckState b) {
  const auto rank = [](CheckState state) {
    switch (state) {
      case CheckState::kNotApplicable: return 0;
      case CheckState::kOk: return 1;
      case CheckState::kUnknown: return 2;
      case CheckState::kWarning: return 3;
      case CheckState::kFailed: return 4;
    }
    return 2;
  };
  return rank(a) >= rank(b) ? a : b;
}

}  // namespace kvx::doctor
