#include "cli/doctor_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "doctor/report_json.h"
#include "doctor/report_text.h"

namespace kvx::cli {

void addDoctorOptions(CLI::App& app, DoctorCommandOptions& o) {
  app.description(
      "Checks whether GPUDirect RDMA is usable here and says how to fix what is not.\n"
      "Checks GPUs and driver, RDMA devices, nvidia-peermem, BAR1, IOMMU mode, PCIe topology and\n"
      "ACS, the locked-memory limit and UCX's CUDA support, then gives a verdict per GPU-NIC\n"
      "pair. Exit code 0 when the checks ran, whatever they found (see --strict).");
  app.add_option("--root", o.root, "read sysfs and procfs under this directory (tests, fixtures)")
      ->capture_default_str();
  app.add_option("--pool-bytes", o.poolBytes,
                 "bytes kvx will register (compared with BAR1 and the memlock limit), e.g. 2G")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--json", o.json, "also write the report as JSON to this file ('-': stdout only)");
  app.add_flag("--strict", o.strict, "exit 1 when GPUDirect RDMA is usable for no GPU-NIC pair");
}

int runDoctorCommand(const DoctorCommandOptions& o) {
  doctor::DoctorOptions options;
  options.root = o.root;
  options.poolBytes = o.poolBytes;
  auto report = doctor::runDoctor(options);
  if (!report.isOk()) {
    std::fprintf(stderr, "kvx doctor: %s\n", report.status().toString().c_str());
    return 2;
  }
  if (o.json == "-") {
    std::cout << doctor::renderJson(*report).dump(2) << '\n';
  } else {
    std::cout << doctor::renderText(*report);
    if (!o.json.empty()) {
      std::ofstream out(o.json);
      out << doctor::renderJson(*report).dump(2) << '\n';
      if (!out) {
        std::fprintf(stderr, "kvx doctor: cannot write the JSON report to %s: check the path\n",
                     o.json.c_str());
        return 2;
      }
    }
  }
  std::cout.flush();
  return o.strict && !report->verdict.usable ? 1 : 0;
}

}  // namespace kvx::cli
