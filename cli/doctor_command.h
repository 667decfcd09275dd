#pragma once

// `kvx doctor`: checks whether GPUDirect RDMA is usable on this machine (GPUs and driver,
// nvidia-peermem, BAR1, IOMMU, PCIe topology and ACS, RDMA ports, locked-memory limit, UCX's
// CUDA support) and prints, per check, what it found, whether that is OK and how to fix it,
// then a verdict per GPU-NIC pair (doctor/doctor.h, docs/gpu.md).

#include <cstdint>
#include <string>

#include "cli/cli_app_fwd.h"
#include "doctor/doctor.h"

namespace kvx::cli {

struct DoctorCommandOptions {
  std::string root = "/";
  std::uint64_t poolBytes = doctor::kDefaultPoolBytes;
  std::string json;  // a file for the JSON report; "-" writes it to stdout instead of the text
  bool strict = false;
};

void addDoctorOptions(CLI::App& app, DoctorCommandOptions& options);

// Returns the exit code: 0 when the checks ran, whatever they found; with --strict, 1 when
// GPUDirect RDMA is usable for no GPU-NIC pair; 2 for a usage error (a root that is not a
// directory, a zero pool, a JSON file that cannot be written).
int runDoctorCommand(const DoctorCommandOptions& options);

}  // namespace kvx::cli
