#include "bench/kv/bench_output.h"

#include <fmt/format.h>

#include <algorithm>

namespace kvx::bench {
namespace {

double ms(std::chrono::nanoseconds d) { return static_cast<double>(d.count()) / 1e6; }

std::string memoryCell(const BenchCase& c) {
  return c.memory == "cuda" ? "cuda:" + std::to_string(c.device) : c.memory;
}

std::string joined(const std::vector<std::string>& texts) {
  std::string out;
  for (const std::string& t : texts) out += (out.empty() ? "" : " | ") + t;
  return out;
}

// A CSV field's text between double quotes: quotes doubled.
std::string csvText(const std::string& text) {
  std::string out;
  for (const char ch : text) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out;
}

nlohmann::json latencyJson(const workload::LatencySummary& s) {
  return {{"count", s.count},
          {"p50Ms", ms(s.p50)},
          {"p90Ms", ms(s.p90)},
          {"p99Ms", ms(s.p99)},
          {"maxMs", ms(s.max)}};
}

nlohmann::json caseJson(const CaseOutcome& o) {
  const BenchCase& c = o.benchCase;
  nlohmann::json out = {
      {"scenario", c.scenario},     {"case", c.label},          {"model", c.model},
      {"layout", c.layout},         {"transport", c.transport}, {"mode", c.mode},
      {"tokens", c.tokens},         {"requests", c.requests},   {"window", c.window},
      {"blockOrder", c.blockOrder}, {"layerwise", c.layerwise}, {"layerMs", c.layerMs},
      {"prefillTp", c.prefillTp},   {"decodeTp", c.decodeTp},   {"prefills", c.prefills},
      {"decodes", c.decodes},       {"verify", c.verify},       {"clean", o.clean()},
      {"memory", memoryCell(c)}};
  if (c.memory == "cuda") out["gpuPath"] = c.gpuPath;
  if (!o.kvx) {
    out["error"] = o.error.toString();
    return out;
  }
  const CaseMetrics& m = o.kvx->metrics;
  out["kvx"] = {{"released", m.released},
                {"failed", m.failed},
                {"errors", m.errors},
                {"problems", o.kvx->problems},
                {"notes", o.kvx->notes},
                {"bytes", m.bytes},
                {"wallSeconds", m.wallSeconds},
                {"busySeconds", m.busySeconds},
                {"gbps", m.gbps},
                {"medianRequestGbps", m.medianRequestGbps},
                {"notified", latencyJson(m.notified)},
                {"done", latencyJson(m.done)},
                {"descriptorsPerRequest", m.descriptorsPerRequest},
                {"operationsPerRequest", m.operationsPerRequest},
                {"descriptorsPerSecond", m.descriptorsPerSecond},
                {"cpuUsPerRequest",
                 {{"prefill", m.prefillCpuUsPerRequest}, {"decode", m.decodeCpuUsPerRequest}}},
                {"arrivals", m.arrivals},
                {"verifiedBlocks", m.verifiedBlocks},
                {"corruptBlocks", m.corruptBlocks},
                {"senderGbps", m.senderGbps},
                {"jainFairness", m.jainFairness},
                {"exposedTail", latencyJson(m.exposedTail)},
                {"donePerMiB", latencyJson(m.donePerMiB)},
                {"placing", latencyJson(m.placing)},
                {"moving", latencyJson(m.moving)},
                {"submitLag", latencyJson(m.submitLag)},
                {"sinceArrival", latencyJson(m.sinceArrival)},
                {"idealLink", latencyJson(m.idealLink)},
                {"dataPaths", o.kvx->dataPaths}};
  if (!o.kvx->gpuRuntime.empty()) out["kvx"]["gpuRuntime"] = o.kvx->gpuRuntime;
  if (o.bare) {
    out["bare"] = nlohmann::json::parse(toJson(*o.bare));
    out["ratio"] = o.ratio();
  } else if (!o.bareError.isOk()) {
    out["bareError"] = o.bareError.toString();
  }
  return out;
}

double tailRatio(const workload::LatencySummary& s) {
  return s.p50.count() > 0 ? static_cast<double>(s.p99.count()) / static_cast<double>(s.p50.count())
                           : 0;
}

std::string latencyCell(const workload::LatencySummary& s) {
  if (s.count == 0) return "-";
  return fmt::format("{:.1f}/{:.1f}", ms(s.p50), ms(s.p99));
}

}  // namespace

// With GPU memory and a copy reference in the header: the best case against the ceiling of
// the live path (device to device for the direct path; the slower of host to device and
// device to host for the staged one, which crosses both). "" otherwise.
std::string gpuCopyRatioLine(const RunHeader& header, const std::vector<CaseOutcome>& outcomes) {
  const nlohmann::json& memory = header.json.value("memory", nlohmann::json::object());
  if (!memory.contains("gpuCopyReference")) return "";
  const nlohmann::json& r = memory["gpuCopyReference"];
  double best = 0;
  for (const CaseOutcome& o : outcomes) {
    if (o.kvx && o.clean()) best = std::max(best, o.kvx->metrics.gbps);
  }
  if (best <= 0) return "";
  const bool direct = header.json.value("gpuDirect", "").rfind("GPUDirect: on", 0) == 0;
  const double ceiling =
      direct ? r.value("deviceToDeviceGBps", 0.0)
             : std::min(r.value("hostToDeviceGBps", 0.0), r.value("deviceToHostGBps", 0.0));
  if (ceiling <= 0) return "";
  return fmt::format("vs GPU copy: best clean case {:.2f} GB/s = {:.3f} of {} ({:.1f} GB/s)\n",
                     best, best / ceiling,
                     direct ? "the device->device copy (the direct path's ceiling)"
                            : "the slower host<->device copy (the staged path's ceiling)",
                     ceiling);
}

std::string renderTable(const RunHeader& header, const std::vector<CaseOutcome>& outcomes,
                        bool verified) {
  std::string out;
  for (const std::string& line : header.lines) out += line + "\n";
  const bool anyRan = std::any_of(outcomes.begin(), outcomes.end(),
                                  [](const CaseOutcome& o) { return o.kvx.has_value(); });
  if (!anyRan) {
    out += "No case ran: nothing was moved or verified.\n";
  } else {
    out += verified ? "Every destination block was verified against its source (checksums).\n"
                    : "NOT verified (--no-verify): destination blocks were not checked.\n";
  }
  std::string scenario;
  for (const CaseOutcome& o : outcomes) {
    if (o.benchCase.scenario != scenario) {
      scenario = o.benchCase.scenario;
      out += fmt::format("\n== {} ==\n", scenario);
      out += fmt::format("{:<34} {:>8} {:>8} {:>6} {:>13} {:>13} {:>9} {:>8} {:>7} {:>11} {}\n",
                         "case", "kvx GB/s", "bare", "ratio", "notify p50/99", "done p50/p99",
                         "desc/req", "ops/req", "Mdesc/s", "CPU us P/D", "check");
    }
    if (!o.kvx) {
      out += fmt::format("{:<34} FAILED TO RUN: {}\n", o.benchCase.label, o.error.toString());
      continue;
    }
    const CaseMetrics& m = o.kvx->metrics;
    const std::string bare = o.bare ? fmt::format("{:.2f}", o.bare->gbps) : "-";
    const std::string ratio = o.bare ? fmt::format("{:.2f}", o.ratio()) : "-";
    std::string check = o.clean() ? "ok" : "FAIL";
    if (m.failed > 0) check += fmt::format(" ({} failed)", m.failed);
    if (m.corruptBlocks > 0) check += fmt::format(" ({} corrupt)", m.corruptBlocks);
    out += fmt::format(
        "{:<34} {:>8.2f} {:>8} {:>6} {:>13} {:>13} {:>9.0f} {:>8.0f} {:>7.2f} {:>11} {}\n",
        o.benchCase.label, m.gbps, bare, ratio, latencyCell(m.notified), latencyCell(m.done),
        m.descriptorsPerRequest, m.operationsPerRequest, m.descriptorsPerSecond / 1e6,
        fmt::format("{:.0f}/{:.0f}", m.prefillCpuUsPerRequest, m.decodeCpuUsPerRequest), check);
    if (m.jainFairness > 0) {
      out += fmt::format("{:<34} senders' Jain fairness {:.3f} over {} senders\n", "",
                         m.jainFairness, m.senderGbps.size());
    }
    if (m.exposedTail.count > 0) {
      out += fmt::format("{:<34} exposed tail after the last layer: p50 {:.1f} ms, p99 {:.1f} ms\n",
                         "", ms(m.exposedTail.p50), ms(m.exposedTail.p99));
    }
    if (o.benchCase.fixedOverhead && o.bare && o.bare->receiverLatency && m.notified.count > 0) {
      const double kvxUs = static_cast<double>(m.notified.p50.count()) / 1e3;
      const double bareUs = o.bare->receiverLatency->p50;
      out += fmt::format(
          "{:<34} fixed overhead: notify p50 {:.1f} us, bare {} x put + flush + AM {:.1f} us "
          "({:+.1f} us)\n",
          "", kvxUs, o.bare->segments, bareUs, kvxUs - bareUs);
    }
    if (!o.benchCase.trace.empty() && m.done.count > 0 && m.donePerMiB.count > 0) {
      out += fmt::format(
          "{:<34} tail: done p99/p50 {:.2f} (raw), {:.2f} per MiB moved ({:.2f}/{:.2f} ms/MiB)\n",
          "", tailRatio(m.done), tailRatio(m.donePerMiB), ms(m.donePerMiB.p50),
          ms(m.donePerMiB.p99));
      out += fmt::format(
          "{:<34} where it waits, p50/p99 ms: placing {:.1f}/{:.1f}, moving {:.1f}/{:.1f}; "
          "submitted after its arrival by {:.1f}/{:.1f}\n",
          "", ms(m.placing.p50), ms(m.placing.p99), ms(m.moving.p50), ms(m.moving.p99),
          ms(m.submitLag.p50), ms(m.submitLag.p99));
      if (m.idealLink.count > 0) {
        out += fmt::format(
            "{:<34} from arrival, p50/p99 ms: {:.1f}/{:.1f} (p99/p50 {:.2f}); an ideal FIFO link "
            "at {:.2f} GB/s: {:.1f}/{:.1f} ({:.2f})\n",
            "", ms(m.sinceArrival.p50), ms(m.sinceArrival.p99), tailRatio(m.sinceArrival), m.gbps,
            ms(m.idealLink.p50), ms(m.idealLink.p99), tailRatio(m.idealLink));
      }
    }
    if (!o.bareError.isOk()) {
      out += fmt::format("{:<34} bare reference failed: {}\n", "", o.bareError.toString());
    }
    for (const std::string& p : o.kvx->problems) out += fmt::format("{:<34} {}\n", "", p);
    for (const std::string& n : o.kvx->notes) out += fmt::format("{:<34} note: {}\n", "", n);
    for (const std::string& e : m.errors) out += fmt::format("{:<34} {}\n", "", e);
  }
  out +=
      "\nGB/s = payload bytes / time with a request in flight, 1e9 B/s; ratio = kvx / bare\n"
      "UCP loop (same transport, op size on the wire, ops per request, window, a notification\n"
      "per request); latencies in ms: notify = submit -> decode agent notified, done = submit\n"
      "-> prefill agent saw the destination confirm. CPU us P/D = CPU per request of the\n"
      "prefill and the decode agents, without filling and checking block content and without\n"
      "the fake GPU runtime's memcpys (copies a GPU makes by DMA).\n";
  out += gpuCopyRatioLine(header, outcomes);
  return out;
}

nlohmann::json toJson(const RunHeader& header, const std::vector<CaseOutcome>& outcomes) {
  nlohmann::json cases = nlohmann::json::array();
  for (const CaseOutcome& o : outcomes) cases.push_back(caseJson(o));
  return {{"tool", "kvx bench"}, {"header", header.json}, {"cases", std::move(cases)}};
}

std::string toCsv(const std::vector<CaseOutcome>& outcomes) {
  std::string out =
      "scenario,case,transport,mode,tokens,window,block_order,kvx_gbps,bare_gbps,ratio,"
      "notify_p50_ms,notify_p99_ms,done_p50_ms,done_p99_ms,descriptors_per_request,"
      "operations_per_request,descriptors_per_second,prefill_cpu_us,decode_cpu_us,released,"
      "failed,corrupt_blocks,memory,gpu_path,gpu_runtime,data_path\n";
  for (const CaseOutcome& o : outcomes) {
    const BenchCase& c = o.benchCase;
    if (!o.kvx) continue;
    const CaseMetrics& m = o.kvx->metrics;
    out += fmt::format(
        "{},\"{}\",{},{},{},{},{},{:.4f},{:.4f},{:.4f},{:.3f},{:.3f},{:.3f},{:.3f},"
        "{:.1f},{:.1f},{:.0f},{:.1f},{:.1f},{},{},{},{},{},\"{}\",\"{}\"\n",
        c.scenario, c.label, c.transport, c.mode, c.tokens, c.window, c.blockOrder, m.gbps,
        o.bare ? o.bare->gbps : 0.0, o.ratio(), ms(m.notified.p50), ms(m.notified.p99),
        ms(m.done.p50), ms(m.done.p99), m.descriptorsPerRequest, m.operationsPerRequest,
        m.descriptorsPerSecond, m.prefillCpuUsPerRequest, m.decodeCpuUsPerRequest, m.released,
        m.failed, m.corruptBlocks, memoryCell(c), c.memory == "cuda" ? c.gpuPath : "-",
        csvText(o.kvx->gpuRuntime), csvText(joined(o.kvx->dataPaths)));
  }
  return out;
}

}  // namespace kvx::bench
