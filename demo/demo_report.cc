#include "demo/demo_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>

#include "demo/demo_tp_counts.h"
#include "demo/report_field.h"
#include "workload/fairness.h"
#include "workload/latency_stats.h"

namespace kvx::demo {
namespace {

constexpr std::size_t kReasonsShown = 5;

double ms(std::chrono::nanoseconds d) { return static_cast<double>(d.count()) / 1e6; }

std::string line(const std::string& label, const std::string& text) {
  return fmt::format("{:<14}{}", label, text);
}

// Failure reasons grouped: the request's own id and the figures in the message are replaced,
// so that equal causes count once.
std::string reasonKey(std::string error, const std::string& id) {
  for (auto at = error.find(id); !id.empty() && at != std::string::npos; at = error.find(id)) {
    error.replace(at, id.size(), "<id>");
  }
  std::string key;
  for (std::size_t i = 0; i < error.size(); ++i) {
    const bool digit = std::isdigit(static_cast<unsigned char>(error[i])) != 0;
    if (!digit) {
      key += error[i];
    } else if (i == 0 || std::isdigit(static_cast<unsigned char>(error[i - 1])) == 0) {
      key += 'N';
    }
  }
  return key.empty() ? "unknown" : key;
}

// Placement reasons carry the figures of the moment ("fewest bytes in flight (178257920, 16% of
// limit)"); the kind of decision is what is before them.
std::string placementKind(const std::string& reason) {
  if (reason.empty()) return "(no reason given)";
  const auto end = reason.find_first_of("(:");
  std::string kind = reason.substr(0, end);
  while (!kind.empty() && kind.back() == ' ') kind.pop_back();
  return kind;
}

nlohmann::json latencyJson(const workload::LatencySummary& s) {
  return {{"count", s.count},   {"p50Ms", ms(s.p50)}, {"p90Ms", ms(s.p90)},
          {"p99Ms", ms(s.p99)}, {"maxMs", ms(s.max)}, {"meanMs", ms(s.mean)}};
}

}  // namespace

DemoReport::DemoReport(DemoInputs inputs) : inputs_(std::move(inputs)) {
  problems_ = inputs_.problems;
  lines_.push_back(inputs_.title);
  json_["title"] = inputs_.title;
  summarizeRequests();
  summarizeDecodes();
  if (inputs_.prefillTp > 1 || inputs_.decodeTp > 1) summarizeTensorParallel();
  json_["passed"] = passed();
  json_["problems"] = problems_;
}

void DemoReport::summarizeRequests() {
  std::vector<const nlohmann::json*> requests;
  double wall = 0;
  for (const PrefillOutcome& p : inputs_.prefills) {
    if (p.exitCode != 0) {
      problems_.push_back(p.name + " exited with " + std::to_string(p.exitCode));
    }
    if (!p.report.is_object() || !p.report.contains("requests")) {
      problems_.push_back(p.name + " wrote no report (exit code " + std::to_string(p.exitCode) +
                          ")");
      continue;
    }
    for (const nlohmann::json& r : p.report["requests"]) requests.push_back(&r);
    wall = std::max(wall, p.report["totals"].value("wallSeconds", 0.0));
    const nlohmann::json& usage = p.report["usageAtExit"];
    if (reportCount(usage, "freeBlocks") != reportCount(usage, "totalBlocks")) {
      problems_.push_back(fmt::format("{} pool: {} of {} blocks free at exit", p.name,
                                      reportCount(usage, "freeBlocks"),
                                      reportCount(usage, "totalBlocks")));
    }
  }
  if (inputs_.prefills.empty()) problems_.push_back("no prefill agent ran");
  workload::LatencyRecorder latency, queued;
  std::uint64_t ok = 0, failed = 0, bytes = 0, descriptors = 0, operations = 0, blocks = 0,
                prefixBlocks = 0;
  double rateSum = 0;
  std::map<std::string, std::uint64_t> reasons;
  struct Placement {
    std::uint64_t requests = 0;
    std::uint64_t bytes = 0;
    std::map<std::string, std::uint64_t> reasons;
  };
  std::map<std::string, Placement> placements;
  for (const nlohmann::json* request : requests) {
    const nlohmann::json& r = *request;
    const bool released = r.value("released", false);
    const std::string peer = r.value("peer", "");
    if (!peer.empty()) {
      Placement& p = placements[peer];
      ++p.requests;
      p.bytes += reportCount(r, "bytes");
      ++p.reasons[placementKind(r.value("placement", ""))];
    }
    if (!released) {
      ++failed;
      ++reasons[reasonKey(r.value("error", ""), r.value("id", ""))];
      continue;
    }
    ++ok;
    const auto lat = std::chrono::nanoseconds(reportCount(r, "latencyNs"));
    latency.add(lat);
    queued.add(std::chrono::nanoseconds(reportCount(r, "queuedNs")));
    bytes += reportCount(r, "bytes");
    descriptors += reportCount(r, "descriptors");
    operations += reportCount(r, "operations");
    blocks += reportCount(r, "blocks");
    prefixBlocks += reportCount(r, "prefixBlocks");
    if (lat.count() > 0) rateSum += static_cast<double>(reportCount(r, "bytes")) / lat.count();
  }
  const auto lat = latency.summary();
  const auto que = queued.summary();
  const double gbps = wall > 0 ? static_cast<double>(bytes) / wall / 1e9 : 0;
  const double meanGbps = ok > 0 ? rateSum / static_cast<double>(ok) : 0;  // bytes/ns = GB/s
  const double coalescing =
      operations > 0 ? static_cast<double>(descriptors) / static_cast<double>(operations) : 0;

  lines_.push_back(line("requests", fmt::format("{} ok, {} failed", ok, failed)));
  std::vector<std::pair<std::uint64_t, std::string>> byCount;
  for (const auto& [reason, count] : reasons) byCount.emplace_back(count, reason);
  std::sort(byCount.begin(), byCount.end(), std::greater<>());
  for (std::size_t i = 0; i < byCount.size() && i < kReasonsShown; ++i) {
    lines_.push_back(line("", fmt::format("{} x {}", byCount[i].first, byCount[i].second)));
  }
  if (byCount.size() > kReasonsShown) {
    lines_.push_back(line(
        "", fmt::format("... and {} other reasons (see --json)", byCount.size() - kReasonsShown)));
  }
  lines_.push_back(
      line("latency", fmt::format("p50 {:.2f} ms  p90 {:.2f} ms  p99 {:.2f} ms  max "
                                  "{:.2f} ms  (submit -> destination confirmed)",
                                  ms(lat.p50), ms(lat.p90), ms(lat.p99), ms(lat.max))));
  lines_.push_back(
      line("queueing", fmt::format("p50 {:.2f} ms  p90 {:.2f} ms  p99 {:.2f} ms  max "
                                   "{:.2f} ms  (submit -> placed)",
                                   ms(que.p50), ms(que.p90), ms(que.p99), ms(que.max))));
  lines_.push_back(line(
      "bandwidth", fmt::format("{:.2f} GiB in {:.2f} s of replay = {:.2f} GB/s; per request "
                               "{:.2f} GB/s mean (payload / latency)",
                               static_cast<double>(bytes) / (1u << 30), wall, gbps, meanGbps)));
  lines_.push_back(line("on the wire", fmt::format("{} descriptors -> {} operations ({:.1f} "
                                                   "descriptors per operation)",
                                                   descriptors, operations, coalescing)));
  lines_.push_back(
      line("prefix reuse",
           fmt::format("{} of {} destination blocks already there ({:.1f}%)", prefixBlocks, blocks,
                       blocks > 0
                           ? 100.0 * static_cast<double>(prefixBlocks) / static_cast<double>(blocks)
                           : 0.0)));
  nlohmann::json placementJson = nlohmann::json::object();
  bool first = true;
  for (const auto& [peer, p] : placements) {
    std::string why;
    for (const auto& [reason, count] : p.reasons) {
      why += fmt::format("{}{} x {}", why.empty() ? "" : "; ", count, reason);
    }
    lines_.push_back(line(first ? "placement" : "",
                          fmt::format("{}: {} requests, {:.2f} GiB ({})", peer, p.requests,
                                      static_cast<double>(p.bytes) / (1u << 30), why)));
    placementJson[peer] = {{"requests", p.requests}, {"bytes", p.bytes}, {"reasons", p.reasons}};
    first = false;
  }
  std::string paths;
  nlohmann::json pathsJson = nlohmann::json::array();
  for (const PrefillOutcome& p : inputs_.prefills) {
    if (!p.report.is_object() || !p.report.contains("peers")) continue;
    for (const auto& peer : p.report["peers"]) {
      paths += fmt::format("{}{}{}: {}", paths.empty() ? "" : "; ",
                           inputs_.prefills.size() > 1 ? p.name + " -> " : "",
                           peer.value("name", "?"), peer.value("dataPath", "?"));
      pathsJson.push_back({{"from", p.name},
                           {"to", peer.value("name", "?")},
                           {"dataPath", peer.value("dataPath", "?")}});
    }
  }
  // Where the pools live, as the (first) prefill agent reported it; GPU pools name the GPU
  // runtime, so that a run on a test double says so.
  if (!inputs_.prefills.empty() && inputs_.prefills[0].report.is_object()) {
    const nlohmann::json memory =
        inputs_.prefills[0].report.value("memory", nlohmann::json::object());
    json_["memory"] = memory;
    if (memory.value("kind", "host") == "cuda") {
      lines_.push_back(line(
          "memory", fmt::format("CUDA device {}, GPU path {}; {}", memory.value("device", 0),
                                memory.value("gpuPath", "?"), memory.value("gpuRuntime", "?"))));
    }
  }
  if (!paths.empty()) lines_.push_back(line("data path", paths));
  json_["dataPaths"] = std::move(pathsJson);
  json_["requests"] = {{"ok", ok}, {"failed", failed}, {"failureReasons", reasons}};
  json_["latency"] = latencyJson(lat);
  json_["queueing"] = latencyJson(que);
  json_["bytes"] = bytes;
  json_["wallSeconds"] = wall;
  json_["gbPerSecond"] = gbps;
  json_["meanRequestGbPerSecond"] = meanGbps;
  json_["descriptors"] = descriptors;
  json_["operations"] = operations;
  json_["descriptorsPerOperation"] = coalescing;
  json_["blocks"] = blocks;
  json_["prefixBlocks"] = prefixBlocks;
  json_["placement"] = placementJson;

  if (failed > 0) problems_.push_back(std::to_string(failed) + " request(s) failed");
  if (ok + failed == 0) problems_.push_back("the workload had no requests");
  nlohmann::json pools = nlohmann::json::object();
  for (const PrefillOutcome& p : inputs_.prefills) {
    if (p.report.is_object()) pools[p.name] = p.report["usageAtExit"];
  }
  // "prefillPool": the first prefill agent's (the only one without TP).
  if (!inputs_.prefills.empty()) {
    json_["prefillPool"] = pools.value(inputs_.prefills[0].name, nlohmann::json());
  }
  json_["prefillPools"] = std::move(pools);
}

void DemoReport::summarizeDecodes() {
  nlohmann::json decodes = nlohmann::json::array();
  std::string pools;
  bool first = true;
  std::vector<double> received;  // bytes per decode agent, for the placement's fairness
  std::string shares;
  for (const DecodeOutcome& d : inputs_.decodes) {
    decodes.push_back({{"name", d.name}, {"stats", d.stats}, {"exitCode", d.exitCode}});
    if (!d.stats.is_object()) {
      problems_.push_back(d.name + " printed no STATS (exit code " + std::to_string(d.exitCode) +
                          ")");
      continue;
    }
    const std::uint64_t corrupt = reportCount(d.stats, "corruptBlocks");
    const std::uint64_t errors = reportCount(d.stats, "errors");
    lines_.push_back(
        line(first ? "decode side" : "",
             fmt::format("{}: {} arrivals{}, {} of {} blocks verified, {} corrupt{}", d.name,
                         reportCount(d.stats, "arrivals"),
                         reportCount(d.stats, "gathered") > 0
                             ? fmt::format(" ({} gathered)", reportCount(d.stats, "gathered"))
                             : "",
                         reportCount(d.stats, "blocksVerified"), reportCount(d.stats, "blocks"),
                         corrupt, errors > 0 ? fmt::format(", {} errors", errors) : "")));
    first = false;
    const std::uint64_t bytes = reportCount(d.stats, "bytes");
    received.push_back(static_cast<double>(bytes));
    shares += fmt::format("{}{} {:.2f} GiB", shares.empty() ? "" : ", ", d.name,
                          static_cast<double>(bytes) / (1ull << 30));
    if (corrupt > 0) problems_.push_back(fmt::format("{}: {} corrupt blocks", d.name, corrupt));
    if (errors > 0) problems_.push_back(fmt::format("{}: {} failed calls", d.name, errors));
    if (d.exitCode != 0) problems_.push_back(d.name + " exited with " + std::to_string(d.exitCode));
    const std::uint64_t free = reportCount(d.stats, "freeBlocks"),
                        total = reportCount(d.stats, "totalBlocks");
    if (free != total) {
      problems_.push_back(fmt::format("{}: {} of {} blocks free at exit", d.name, free, total));
    }
    pools += fmt::format("{}{} {}/{}", pools.empty() ? "" : ", ", d.name, free, total);
  }
  for (const PrefillOutcome& p : inputs_.prefills) {
    if (!p.report.is_object()) continue;
    const nlohmann::json& usage = p.report["usageAtExit"];
    pools += fmt::format("{}{} {}/{}", pools.empty() ? "" : ", ", p.name,
                         reportCount(usage, "freeBlocks"), reportCount(usage, "totalBlocks"));
  }
  lines_.push_back(line("pools free", pools + " (free/total blocks at exit)"));
  if (received.size() > 1) {
    const double fairness = workload::jainFairness(received);
    lines_.push_back(line(
        "received", fmt::format("{}; Jain fairness {:.3f} (1 = equal shares)", shares, fairness)));
    json_["decodeFairness"] = fairness;
  }
  json_["decodes"] = std::move(decodes);
}

void DemoReport::summarizeTensorParallel() {
  const TpDemoCounts c = countTensorParallel(inputs_);
  for (const std::string& rank : c.shortRanks) {
    problems_.push_back(rank + "; every decode rank should receive and verify all " +
                        std::to_string(c.completePrompts) + " complete prompts");
  }
  lines_.push_back(
      line("tensor par.", fmt::format("prefill TP{} -> decode TP{}: {} prompts in {} requests; {} "
                                      "scatters (a prefill rank's heads to several decode ranks), "
                                      "{} gathers (several prefill ranks into one decode request)",
                                      inputs_.prefillTp, inputs_.decodeTp, c.prompts, c.requests,
                                      c.scatters, c.gathers)));
  lines_.push_back(
      line("", fmt::format("{} of {} decode ranks received and verified their "
                           "heads of all {} complete prompts",
                           c.ranksVerified, inputs_.decodes.size(), c.completePrompts)));
  json_["tensorParallel"] = {
      {"prefillTp", inputs_.prefillTp}, {"decodeTp", inputs_.decodeTp},
      {"prompts", c.prompts},           {"completePrompts", c.completePrompts},
      {"requests", c.requests},         {"scatters", c.scatters},
      {"gathers", c.gathers},           {"ranksVerified", c.ranksVerified}};
}

std::string DemoReport::text() const {
  std::string out;
  for (const std::string& l : lines_) out += l + "\n";
  for (const std::string& p : problems_) out += line("PROBLEM", p) + "\n";
  out += passed() ? "RESULT: PASS\n" : "RESULT: FAIL\n";
  return out;
}

}  // namespace kvx::demo
