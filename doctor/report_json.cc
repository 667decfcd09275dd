#include "doctor/report_json.h"

namespace kvx::doctor {
namespace {

using nlohmann::json;

json reasonsJson(const std::vector<Reason>& reasons) {
  json list = json::array();
  for (const auto& reason : reasons) {
    list.push_back({{"check", reason.check}, {"what", reason.what}, {"fix", reason.fix}});
  }
  return list;
}

json checksJson(const std::vector<CheckResult>& checks) {
  json list = json::array();
  for (const auto& check : checks) {
    list.push_back({{"id", check.id},
                    {"title", check.title},
                    {"state", std::string(toString(check.state))},
                    {"found", check.found},
                    {"fix", check.fix},
                    {"details", check.details}});
  }
  return list;
}

json gpusJson(const GpuScan& scan) {
  json list = json::array();
  for (const auto& gpu : scan.gpus) {
    list.push_back({{"index", gpu.index},
                    {"address", gpu.pci.address},
                    {"model", gpu.model},
                    {"memoryBytes", gpu.memoryBytes ? json(*gpu.memoryBytes) : json(nullptr)},
                    {"bar1Bytes", gpu.bar1Bytes},
                    {"numaNode", gpu.pci.numaNode},
                    {"driverBound", gpu.driverBound}});
  }
  return list;
}

json nicsJson(const NicScan& scan) {
  json list = json::array();
  for (const auto& nic : scan.nics) {
    json ports = json::array();
    for (const auto& port : nic.ports) {
      ports.push_back({{"port", port.number},
                       {"state", port.state},
                       {"rate", port.rate},
                       {"linkLayer", port.linkLayer},
                       {"gid", port.gid0}});
    }
    list.push_back({{"name", nic.name},
                    {"address", nic.pci ? json(nic.pci->address) : json(nullptr)},
                    {"numaNode", nic.pci ? nic.pci->numaNode : -1},
                    {"ports", ports}});
  }
  return list;
}

json pairsJson(const std::vector<PairVerdict>& pairs) {
  json list = json::array();
  for (const auto& pair : pairs) {
    list.push_back({{"gpu", pair.gpu},
                    {"gpuAddress", pair.gpuAddress},
                    {"nic", pair.nic},
                    {"nicAddress", pair.nicAddress},
                    {"path", std::string(toString(pair.path))},
                    {"via", pair.via},
                    {"usable", pair.usable()},
                    {"sentence", pair.sentence()},
                    {"reasons", reasonsJson(pair.blockers)},
                    {"caveats", reasonsJson(pair.caveats)}});
  }
  return list;
}

json verdictJson(const Verdict& verdict) {
  json fixes = json::array();
  for (const auto& remedy : verdict.fixes) {
    fixes.push_back({{"check", remedy.check},
                     {"fix", remedy.fix},
                     {"pairs", remedy.pairs},
                     {"example", remedy.example}});
  }
  return {{"usable", verdict.usable},
          {"summary", verdict.summary},
          {"meaning", verdict.meaning},
          {"choices", verdict.choices},
          {"fixes", fixes}};
}

}  // namespace

nlohmann::json renderJson(const DoctorReport& report) {
  return {{"root", report.facts.root},
          {"poolBytes", report.facts.poolBytes},
          {"checks", checksJson(report.checks)},
          {"gpus", gpusJson(report.facts.gpus)},
          {"nics", nicsJson(report.facts.nics)},
          {"pairs", pairsJson(report.pairs)},
          {"verdict", verdictJson(report.verdict)}};
}

}  // namespace kvx::doctor
