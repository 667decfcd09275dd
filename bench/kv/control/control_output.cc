#include "bench/kv/control/control_output.h"

#include <fmt/format.h>

#include <cmath>

namespace kvx::bench {
namespace {

std::string csvField(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

std::string metText(const ControlFigure& f) {
  if (f.target.empty() || !f.met) return "";
  return fmt::format("target {}: {}", f.target, *f.met ? "met" : "NOT met");
}

std::string joinNonEmpty(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "; " + b;
}

}  // namespace

std::string bytesLabel(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  if (value == std::floor(value)) return fmt::format("{:.0f} {}", value, units[unit]);
  return fmt::format("{:.1f} {}", value, units[unit]);
}

std::string formatValue(double value, const std::string& unit) {
  if (unit == "bytes") return fmt::format("{:.0f}", value);
  const double magnitude = std::fabs(value);
  if (magnitude >= 100 || value == 0) return fmt::format("{:.0f}", value);
  if (magnitude >= 10) return fmt::format("{:.1f}", value);
  if (magnitude >= 1) return fmt::format("{:.2f}", value);
  return fmt::format("{:.3g}", value);
}

std::string renderControlTable(const ControlReport& report) {
  std::string out = "\n== control ==\n";
  out += fmt::format("{:<58} {:<5} {:>9} {:<8} {}\n", "figure", "tport", "value", "unit", "detail");
  std::string group;
  for (const ControlFigure& f : report.figures) {
    if (f.group != group) {
      group = f.group;
      out += group + ":\n";
    }
    const std::string name = "  " + f.name;
    const std::string transport = f.transport.empty() ? "-" : f.transport;
    if (!f.value) {
      out += fmt::format("{:<58} {:<5} {}: {}\n", name, transport,
                         f.failed ? "FAILED" : "not measured", f.why);
      continue;
    }
    std::string detail = joinNonEmpty(metText(f), f.detail);
    if (f.samples > 1) detail = joinNonEmpty(fmt::format("n={}", f.samples), detail);
    out += fmt::format("{:<58} {:<5} {:>9} {:<8} {}\n", name, transport,
                       formatValue(*f.value, f.unit), f.unit, detail);
  }
  if (!report.notes.empty()) out += "\n";
  for (const std::string& note : report.notes) out += note + "\n";
  return out;
}

nlohmann::json controlToJson(const ControlReport& report) {
  nlohmann::json figures = nlohmann::json::array();
  for (const ControlFigure& f : report.figures) {
    figures.push_back({{"group", f.group},
                       {"name", f.name},
                       {"transport", f.transport},
                       {"value", f.value ? nlohmann::json(*f.value) : nlohmann::json(nullptr)},
                       {"unit", f.unit},
                       {"samples", f.samples},
                       {"detail", f.detail},
                       {"target", f.target},
                       {"met", f.met ? nlohmann::json(*f.met) : nlohmann::json(nullptr)},
                       {"why", f.why},
                       {"failed", f.failed}});
  }
  return {{"scenario", "control"}, {"figures", std::move(figures)}, {"notes", report.notes}};
}

Result<ControlReport> controlFromJson(const nlohmann::json& json) {
  ControlReport report;
  std::size_t index = 0;
  try {
    for (const auto& f : json.at("figures")) {
      ControlFigure figure;
      figure.group = f.at("group").get<std::string>();
      figure.name = f.at("name").get<std::string>();
      figure.transport = f.at("transport").get<std::string>();
      if (!f.at("value").is_null()) figure.value = f.at("value").get<double>();
      figure.unit = f.at("unit").get<std::string>();
      figure.samples = f.at("samples").get<std::uint32_t>();
      figure.detail = f.at("detail").get<std::string>();
      figure.target = f.at("target").get<std::string>();
      if (!f.at("met").is_null()) figure.met = f.at("met").get<bool>();
      figure.why = f.at("why").get<std::string>();
      figure.failed = f.at("failed").get<bool>();
      report.figures.push_back(std::move(figure));
      ++index;
    }
    for (const auto& note : json.at("notes")) report.notes.push_back(note.get<std::string>());
  } catch (const nlohmann::json::exception& e) {
    return protocolError(fmt::format("control figures JSON, figure {}: {}", index, e.what()));
  }
  return report;
}

std::string controlToCsv(const ControlReport& report) {
  std::string out =
      "scenario,group,figure,transport,value,unit,samples,target,met,detail,why,failed\n";
  for (const ControlFigure& f : report.figures) {
    out += fmt::format("control,{},{},{},{},{},{},{},{},{},{},{}\n", csvField(f.group),
                       csvField(f.name), f.transport, f.value ? fmt::format("{}", *f.value) : "",
                       csvField(f.unit), f.samples, csvField(f.target),
                       f.met ? (*f.met ? "yes" : "no") : "", csvField(f.detail), csvField(f.why),
                       f.failed ? "yes" : "no");
  }
  return out;
}

}  // namespace kvx::bench
