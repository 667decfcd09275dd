#include "daemon/decode_report.h"

namespace kvx::daemon {

nlohmann::json decodeReport(const std::string& agentName,
                            const std::vector<ArrivalRecord>& arrivals, const CpuTime& cpuStart,
                            const CpuTime& cpuEnd, std::int64_t readyCpuUs) {
  nlohmann::json list = nlohmann::json::array();
  std::uint64_t verified = 0, corrupt = 0;
  for (const ArrivalRecord& a : arrivals) {
    list.push_back({{"id", a.id},
                    {"arrivedNs", a.arrivedNs},
                    {"blocks", a.blocks},
                    {"peers", a.peers},
                    {"verifiedBlocks", a.verifiedBlocks},
                    {"corruptBlocks", a.corruptBlocks}});
    verified += a.verifiedBlocks;
    corrupt += a.corruptBlocks;
  }
  return {{"agent", agentName},       {"arrivals", std::move(list)},  {"verifiedBlocks", verified},
          {"corruptBlocks", corrupt}, {"cpuStart", toJson(cpuStart)}, {"cpuEnd", toJson(cpuEnd)},
          {"readyCpuUs", readyCpuUs}, {"cpu", toJson(cpuEnd)}};
}

}  // namespace kvx::daemon
