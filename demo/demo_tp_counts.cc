#include "demo/demo_tp_counts.h"

#include <fmt/format.h>

#include <map>

#include "demo/report_field.h"

namespace kvx::demo {

TpDemoCounts countTensorParallel(const DemoInputs& inputs) {
  TpDemoCounts c;
  std::map<std::string, bool> complete;  // by prompt
  for (const PrefillOutcome& p : inputs.prefills) {
    if (!p.report.is_object() || !p.report.contains("requests")) continue;
    std::map<std::string, std::uint64_t> parts;  // this rank's requests per prompt
    for (const nlohmann::json& r : p.report["requests"]) {
      const std::string prompt = r.value("destinationId", r.value("id", ""));
      auto [it, inserted] = complete.emplace(prompt, true);
      it->second = it->second && r.value("released", false);
      ++parts[prompt];
      ++c.requests;
    }
    for (const auto& [prompt, count] : parts) c.scatters += count > 1 ? 1 : 0;
  }
  c.prompts = complete.size();
  for (const auto& [prompt, ok] : complete) c.completePrompts += ok ? 1 : 0;
  for (const DecodeOutcome& d : inputs.decodes) {
    if (!d.stats.is_object()) continue;  // reported as a problem of its own
    c.gathers += reportCount(d.stats, "gathered");
    if (reportCount(d.stats, "arrivals") == c.completePrompts &&
        reportCount(d.stats, "blocksVerified") == reportCount(d.stats, "blocks")) {
      ++c.ranksVerified;
    } else {
      c.shortRanks.push_back(fmt::format(
          "{}: {} arrivals with {} of {} blocks verified", d.name, reportCount(d.stats, "arrivals"),
          reportCount(d.stats, "blocksVerified"), reportCount(d.stats, "blocks")));
    }
  }
  return c;
}

}  // namespace kvx::demo
