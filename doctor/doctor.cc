#include "doctor/doctor.h"

#include "doctor/gpu_checks.h"
#include "doctor/host_checks.h"
#include "doctor/nic_checks.h"
#include "doctor/topology_checks.h"

namespace kvx::doctor {

Result<DoctorReport> runDoctor(const DoctorOptions& options) {
  std::error_code error;
  if (!std::filesystem::is_directory(options.root, error)) {
    return invalidArgument("root " + options.root.string() +
                           " is not a directory: pass --root DIR with a sysfs/procfs tree, or "
                           "leave it out to check this machine");
  }
  if (options.poolBytes == 0) {
    return invalidArgument(
        "the pool size is 0: pass --pool-bytes with the bytes kvx will "
        "register (e.g. 2G)");
  }
  const SystemRoot root(options.root);
  std::unique_ptr<UcxProbe> ownProbe;
  const UcxProbe* ucx = options.ucx;
  if (ucx == nullptr) {
    ownProbe = makeUcxProbeFor(root);
    ucx = ownProbe.get();
  }

  DoctorReport report;
  report.facts = gatherFacts(root, options.poolBytes, *ucx);
  const SystemFacts& facts = report.facts;
  report.checks = {checkGpus(facts), checkRdma(facts),  checkPeermem(facts),
                   checkBar1(facts), checkIommu(facts), checkTopology(facts),
                   checkAcs(facts),  checkHwloc(facts), checkMemlock(facts),
                   checkUcx(facts)};
  report.pairs = judgePairs(facts);
  report.verdict = summarize(facts, report.pairs);
  return report;
}

}  // namespace kvx::doctor
