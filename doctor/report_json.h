#pragma once

// The doctor's report for programs (`kvx doctor --json FILE`):
//   {"root", "poolBytes",
//    "checks": [{"id", "title", "state": "ok|warning|failed|unknown|n/a", "found", "fix",
//                "details": [...]}],
//    "gpus": [{"index", "address", "model", "memoryBytes" (null when unknown), "bar1Bytes",
//              "numaNode", "driverBound"}],
//    "nics": [{"name", "address" (null without PCI), "numaNode",
//              "ports": [{"port", "state", "rate", "linkLayer", "gid"}]}],
//    "pairs": [{"gpu", "gpuAddress", "nic", "nicAddress", "path", "via", "usable", "sentence",
//               "reasons": [{"check", "what", "fix"}], "caveats": [...]}],
//    "verdict": {"usable", "summary", "meaning", "choices": [...],
//                "fixes": [{"check", "fix", "pairs", "example"}]}}
// `path` is one of same-switch, same-root-complex, different-root-complexes, across-sockets.

#include <nlohmann/json.hpp>

#include "doctor/doctor.h"

namespace kvx::doctor {

nlohmann::json renderJson(const DoctorReport& report);

}  // namespace kvx::doctor
