#include "bench/kv/case_metrics.h"

#include <algorithm>
#include <limits>
#include <map>

#include "workload/fairness.h"
#include "workload/ideal_link.h"

namespace kvx::bench {
namespace {

using std::chrono::nanoseconds;

Result<std::int64_t> integerField(const nlohmann::json& object, const char* key,
                                  const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) {
    return protocolError(where + " has no numeric '" + key +
                         "' (is the kvx agent binary the same version as kvx bench?)");
  }
  return it->get<std::int64_t>();
}

// User + system CPU microseconds between a report's cpuStart and cpuEnd, without what is not
// the cost of moving blocks: filling and checking their content, and the fake GPU runtime's
// memcpys for copies a GPU makes by DMA.
double cpuMicros(const nlohmann::json& report) {
  const auto total = [](const nlohmann::json& cpu) {
    return cpu.value("userUs", 0.0) + cpu.value("sysUs", 0.0) - cpu.value("contentUs", 0.0) -
           cpu.value("emulatedCopyUs", 0.0);
  };
  if (report.contains("cpuEnd")) {
    // Readying each peer's pool is a one-time cost per peer, not a cost per request.
    return total(report["cpuEnd"]) - total(report.value("cpuStart", nlohmann::json::object())) -
           report.value("readyCpuUs", 0.0);
  }
  return total(report.value("cpu", nlohmann::json::object()));
}

}  // namespace

std::string destinationIdOf(const std::string& prefillId) {
  const std::size_t at = prefillId.rfind("@d");
  return at == std::string::npos ? prefillId : prefillId.substr(0, at);
}

Result<CaseMetrics> computeMetrics(const BenchCase& c,
                                   const std::vector<nlohmann::json>& prefillReports,
                                   const std::vector<nlohmann::json>& decodeReports) {
  CaseMetrics m;
  std::map<std::string, std::int64_t> arrivedNs;
  double decodeCpu = 0;
  for (const nlohmann::json& report : decodeReports) {
    for (const nlohmann::json& a : report.value("arrivals", nlohmann::json::array())) {
      KVX_ASSIGN_OR_RETURN(std::int64_t at, integerField(a, "arrivedNs", "a decode arrival"));
      arrivedNs[a.value("id", std::string())] = at;
      ++m.arrivals;
    }
    m.verifiedBlocks += report.value("verifiedBlocks", std::uint64_t{0});
    m.corruptBlocks += report.value("corruptBlocks", std::uint64_t{0});
    decodeCpu += cpuMicros(report);
  }
  std::map<std::string, std::int64_t> firstSubmit;  // per destination id
  std::map<std::string, std::int64_t> lastLayer;    // per destination id, layer-wise only
  workload::LatencyRecorder done, notified, tail, perMiB, placing, moving, submitLag, sinceArrival;
  std::vector<workload::LinkJob> linkJobs;  // arrival (steady ns) and bytes per request
  std::vector<double> perRequestGbps;
  std::vector<std::pair<std::int64_t, std::int64_t>> busy;  // [submit, done] per request
  std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = 0;
  std::uint64_t descriptors = 0, operations = 0;
  double prefillCpu = 0;
  for (const nlohmann::json& report : prefillReports) {
    std::int64_t senderFirst = std::numeric_limits<std::int64_t>::max(), senderLast = 0;
    std::uint64_t senderBytes = 0;
    for (const nlohmann::json& r : report.value("requests", nlohmann::json::array())) {
      ++m.requests;
      if (!r.value("released", false)) {
        ++m.failed;
        if (m.errors.size() < 5)
          m.errors.push_back(r.value("id", "") + ": " + r.value("error", ""));
        continue;
      }
      ++m.released;
      KVX_ASSIGN_OR_RETURN(std::int64_t submit, integerField(r, "submitNs", "a prefill request"));
      KVX_ASSIGN_OR_RETURN(std::int64_t end, integerField(r, "doneNs", "a prefill request"));
      const std::uint64_t bytes = r.value("bytes", std::uint64_t{0});
      m.bytes += bytes;
      senderBytes += bytes;
      descriptors += r.value("descriptors", std::uint64_t{0});
      operations += r.value("operations", std::uint64_t{0});
      done.add(nanoseconds(end - submit));
      const std::int64_t placed = std::clamp<std::int64_t>(r.value("queuedNs", std::int64_t{0}), 0,
                                                           std::max<std::int64_t>(0, end - submit));
      placing.add(nanoseconds(placed));
      moving.add(nanoseconds(std::max<std::int64_t>(0, end - submit - placed)));
      const double lagMs = r.value("submittedAtMs", 0.0) - r.value("arrivalMs", 0.0);
      const nanoseconds lag(static_cast<std::int64_t>(std::max(0.0, lagMs) * 1e6));
      submitLag.add(lag);
      sinceArrival.add(nanoseconds(end - submit) + lag);
      linkJobs.push_back({nanoseconds(submit) - lag, bytes});
      busy.emplace_back(submit, end);
      if (end > submit) perRequestGbps.push_back(static_cast<double>(bytes) / (end - submit));
      if (bytes > 0) {
        const double mib = static_cast<double>(bytes) / (1u << 20);
        perMiB.add(nanoseconds(static_cast<std::int64_t>(static_cast<double>(end - submit) / mib)));
      }
      first = std::min(first, submit);
      last = std::max(last, end);
      senderFirst = std::min(senderFirst, submit);
      senderLast = std::max(senderLast, end);
      const std::string dest = destinationIdOf(r.value("id", std::string()));
      auto [it, inserted] = firstSubmit.emplace(dest, submit);
      if (!inserted) it->second = std::min(it->second, submit);
      if (const std::int64_t handed = r.value("lastLayerNs", std::int64_t{0}); handed > 0) {
        auto [at, fresh] = lastLayer.emplace(dest, handed);
        if (!fresh) at->second = std::max(at->second, handed);
      }
    }
    prefillCpu += cpuMicros(report);
    if (senderLast > senderFirst) {
      m.senderGbps.push_back(static_cast<double>(senderBytes) / (senderLast - senderFirst));
    }
  }
  for (const auto& [dest, submit] : firstSubmit) {
    auto it = arrivedNs.find(dest);
    if (it == arrivedNs.end()) continue;
    notified.add(nanoseconds(it->second - submit));
    // The exposed tail: from the last layer handed over to the receiver's notification.
    if (auto handed = lastLayer.find(dest); c.layerwise && handed != lastLayer.end()) {
      tail.add(nanoseconds(std::max<std::int64_t>(0, it->second - handed->second)));
    }
  }
  m.done = done.summary();
  m.notified = notified.summary();
  for (auto sample : notified.samples())
    m.notifiedMs.push_back(static_cast<double>(sample.count()) / 1e6);
  std::sort(m.notifiedMs.begin(), m.notifiedMs.end());
  m.exposedTail = tail.summary();
  m.donePerMiB = perMiB.summary();
  m.placing = placing.summary();
  m.moving = moving.summary();
  m.submitLag = submitLag.summary();
  if (last > first) m.wallSeconds = static_cast<double>(last - first) / 1e9;
  std::sort(busy.begin(), busy.end());
  std::int64_t busyNs = 0, coveredUntil = std::numeric_limits<std::int64_t>::min();
  for (const auto& [from, to] : busy) {
    const std::int64_t start = std::max(from, coveredUntil);
    if (to > start) busyNs += to - start;
    coveredUntil = std::max(coveredUntil, to);
  }
  if (busyNs > 0) {
    m.busySeconds = static_cast<double>(busyNs) / 1e9;
    m.gbps = static_cast<double>(m.bytes) / static_cast<double>(busyNs);
    m.descriptorsPerSecond = static_cast<double>(descriptors) / m.busySeconds;
  }
  if (!perRequestGbps.empty()) {
    std::nth_element(perRequestGbps.begin(), perRequestGbps.begin() + perRequestGbps.size() / 2,
                     perRequestGbps.end());
    m.medianRequestGbps = perRequestGbps[perRequestGbps.size() / 2];
  }
  if (m.released > 0) {
    const double n = static_cast<double>(m.released);
    m.descriptorsPerRequest = static_cast<double>(descriptors) / n;
    m.operationsPerRequest = static_cast<double>(operations) / n;
    m.prefillCpuUsPerRequest = prefillCpu / n;
    m.decodeCpuUsPerRequest = decodeCpu / std::max<double>(1, static_cast<double>(m.arrivals));
  }
  if (m.gbps > 0) {
    m.sinceArrival = sinceArrival.summary();
    KVX_ASSIGN_OR_RETURN(auto ideal, workload::idealFifoLink(linkJobs, m.gbps * 1e9));
    workload::LatencyRecorder idealLink;
    for (nanoseconds latency : ideal) idealLink.add(latency);
    m.idealLink = idealLink.summary();
  }
  if (m.senderGbps.size() > 1) m.jainFairness = workload::jainFairness(m.senderGbps);
  return m;
}

}  // namespace kvx::bench
