#include "daemon/prefill_report.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

namespace kvx::daemon {

nlohmann::json usageJson(const KvPoolUsage& usage) {
  return {{"totalBlocks", usage.totalBlocks},
          {"freeBlocks", usage.freeBlocks},
          {"freeExtents", usage.freeExtents},
          {"largestFreeExtent", usage.largestFreeExtent},
          {"cachedPrefixBlocks", usage.cachedPrefixBlocks}};
}

nlohmann::json replayReport(const std::string& agentName, const ReplayResult& result,
                            const TpPlan& tp, const std::vector<KvPeerStatus>& peers,
                            const KvPoolUsage& usageAtExit) {
  nlohmann::json peerList = nlohmann::json::array();
  for (const KvPeerStatus& peer : peers) {
    peerList.push_back({{"name", peer.name},
                        {"dataPath", peer.dataPath},
                        {"totalBlocks", peer.totalBlocks},
                        {"compatible", peer.compatible}});
  }
  nlohmann::json requests = nlohmann::json::array();
  std::uint64_t released = 0, stopped = 0, submitted = 0, bytes = 0, descriptors = 0,
                operations = 0, blocks = 0, prefixBlocks = 0;
  std::set<std::string> prompts;
  for (const RequestRecord& r : result.requests) {
    prompts.insert(r.destinationId);
    requests.push_back(toJson(r));
    released += r.released ? 1 : 0;
    stopped += r.stopped ? 1 : 0;
    submitted += r.submitted ? 1 : 0;
    bytes += r.status.bytes;
    descriptors += r.status.descriptors;
    operations += r.status.operations;
    blocks += r.status.blocks;
    prefixBlocks += r.status.prefixBlocks;
  }
  const double wallSeconds = static_cast<double>(result.wall.count()) / 1e9;
  return {{"agent", agentName},
          {"requests", std::move(requests)},
          {"totals",
           {{"requests", result.requests.size()},
            {"prompts", prompts.size()},
            {"released", released},
            {"failed", result.requests.size() - released - stopped},
            {"stoppedRequests", stopped},
            {"submitted", submitted},
            {"bytes", bytes},
            {"descriptors", descriptors},
            {"operations", operations},
            {"blocks", blocks},
            {"prefixBlocks", prefixBlocks},
            {"wallSeconds", wallSeconds},
            {"stopped", result.stopped}}},
          {"tp",
           {{"size", tp.size},
            {"rank", tp.rank},
            {"decodeSize", tp.decodeSize},
            {"totalHeads", tp.totalHeads},
            {"firstHead", tp.heads().first},
            {"heads", tp.heads().count}}},
          {"peers", std::move(peerList)},
          {"usageAtExit", usageJson(usageAtExit)},
          {"cpuStart", toJson(result.cpuStart)},
          {"cpuEnd", toJson(result.cpuEnd)},
          {"readyCpuUs", result.readyCpuUs},
          {"cpu", toJson(result.cpuEnd)}};
}

Status writeJsonFile(const std::string& path, const nlohmann::json& json) {
  std::ofstream file(path);
  file << json.dump(2) << '\n';
  file.close();
  if (!file) {
    return notFound("cannot write '" + path + "': " + std::strerror(errno) +
                    "; check that its directory exists and is writable");
  }
  return Status::ok();
}

Status prepareOutputFile(const std::string& path, std::string_view option) {
  std::ofstream file(path, std::ios::trunc);
  if (!file) {
    return invalidArgument(std::string(option) + " '" + path +
                           "' cannot be written: " + std::strerror(errno) +
                           "; check that its directory exists and is writable");
  }
  return Status::ok();
}

}  // namespace kvx::daemon
