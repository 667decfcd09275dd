#pragma once

// The doctor's report for people: one block per check ([ OK ], [WARN], [FAIL], [ ?? ], [ -- ])
// with what was found, the details and the fix; one line per GPU-NIC pair with its verdict and
// reasons; then the verdict, the NIC to use for each GPU and each distinct fix.

#include <string>

#include "doctor/doctor.h"

namespace kvx::doctor {

std::string renderText(const DoctorReport& report);

}  // namespace kvx::doctor
