#include "doctor/report_text.h"

#include <sstream>

#include "doctor/byte_count.h"

namespace kvx::doctor {
namespace {

std::string_view tag(CheckState state) {
  switch (state) {
    case CheckState::kOk: return "[ OK ]";
    case CheckState::kWarning: return "[WARN]";
    case CheckState::kFailed: return "[FAIL]";
    case CheckState::kUnknown: return "[ ?? ]";
    case CheckState::kNotApplicable: return "[ -- ]";
  }
  return "[ ?? ]";
}

void writeCheck(std::ostream& out, const CheckResult& check) {
  out << tag(check.state) << ' ' << check.title << ": " << check.found << '\n';
  for (const auto& detail : check.details) out << "         " << detail << '\n';
  if (!check.fix.empty()) out << "         fix: " << check.fix << '\n';
}

std::string joinedWhats(const std::vector<Reason>& reasons) {
  std::string text;
  for (const auto& reason : reasons) text += (text.empty() ? "" : "; ") + reason.what;
  return text;
}

void writePairs(std::ostream& out, const std::vector<PairVerdict>& pairs) {
  if (pairs.empty()) {
    out << "\nGPU-NIC pairs: none\n";
    return;
  }
  out << "\nGPU-NIC pairs:\n";
  for (const auto& pair : pairs) {
    out << "  " << pair.sentence() << " (" << describe(pair.path)
        << (pair.via.empty() ? "" : ", via " + pair.via) << ")";
    if (!pair.usable()) out << ": " << joinedWhats(pair.blockers);
    out << '\n';
    if (!pair.caveats.empty()) out << "      caveats: " << joinedWhats(pair.caveats) << '\n';
  }
}

void writeVerdict(std::ostream& out, const Verdict& verdict) {
  out << "\nVerdict: " << verdict.summary << "\n  " << verdict.meaning << '\n';
  if (!verdict.choices.empty()) {
    out << "  NICs to use for GPUDirect RDMA:\n";
    for (const auto& choice : verdict.choices) out << "    " << choice << '\n';
  }
  if (!verdict.fixes.empty()) {
    out << "  Fixes:\n";
    for (const auto& remedy : verdict.fixes) {
      out << "    - " << remedy.fix << "\n      (" << remedy.check << ", " << remedy.pairs
          << " pair(s); e.g. " << remedy.example << ")\n";
    }
  }
}

}  // namespace

std::string renderText(const DoctorReport& report) {
  std::ostringstream out;
  out << "kvx doctor: GPUDirect RDMA on " << report.facts.root << " (pool "
      << formatBytes(report.facts.poolBytes) << ")\n\n";
  for (const auto& check : report.checks) writeCheck(out, check);
  writePairs(out, report.pairs);
  writeVerdict(out, report.verdict);
  return out.str();
}

}  // namespace kvx::doctor
