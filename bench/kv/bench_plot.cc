#include "bench/kv/bench_plot.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace kvx::bench {
namespace {

constexpr std::size_t kMaxCurves = 12;

std::string quoted(const std::string& text) {
  std::string out;
  for (char c : text) out += (c == '"' || c == '\\') ? '_' : c;
  return "\"" + out + "\"";
}

}  // namespace

Status writePlot(const std::vector<CaseOutcome>& outcomes, const std::string& pngPath) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    return failedPrecondition(
        "--plot needs gnuplot: install it with `apt-get install gnuplot-nox` (scripts/"
        "install-deps.sh does)");
  }
  char dirTemplate[] = "/tmp/kvx-plot-XXXXXX";
  if (::mkdtemp(dirTemplate) == nullptr) return internalError("cannot create a directory in /tmp");
  const std::string dir = dirTemplate;
  std::string cdfPlots;
  std::ofstream sizes(dir + "/sizes.dat");
  std::size_t curves = 0;
  for (const CaseOutcome& o : outcomes) {
    if (!o.kvx) continue;
    const CaseMetrics& m = o.kvx->metrics;
    if (!m.notifiedMs.empty() && curves < kMaxCurves) {
      const std::string file = fmt::format("{}/cdf{}.dat", dir, curves++);
      std::ofstream cdf(file);
      for (std::size_t i = 0; i < m.notifiedMs.size(); ++i) {
        cdf << m.notifiedMs[i] << ' '
            << static_cast<double>(i + 1) / static_cast<double>(m.notifiedMs.size()) << '\n';
      }
      cdfPlots += fmt::format("{}'{}' using 1:2 with steps title {}", cdfPlots.empty() ? "" : ", ",
                              file, quoted(o.benchCase.scenario + " " + o.benchCase.label));
    }
    if (m.operationsPerRequest > 0 && m.released > 0) {
      const double opBytes =
          static_cast<double>(m.bytes) / (m.operationsPerRequest * static_cast<double>(m.released));
      sizes << opBytes << ' ' << m.gbps << ' ' << (o.bare ? o.bare->gbps : -1) << '\n';
    }
  }
  sizes.close();
  if (cdfPlots.empty()) cdfPlots = "NaN notitle";
  std::ofstream script(dir + "/plot.gp");
  script << "set terminal pngcairo size 1600,700\n"
         << "set output " << quoted(pngPath) << "\n"
         << "set multiplot layout 1,2\n"
         << "set title 'post -> receiver notification latency (CDF)'\n"
         << "set xlabel 'ms'\nset ylabel 'fraction of requests'\nset logscale x\n"
         << "set key bottom right font ',8'\n"
         << "plot " << cdfPlots << "\n"
         << "set title 'GB/s vs operation size on the wire'\n"
         << "set xlabel 'bytes per operation'\nset ylabel 'GB/s'\nset logscale x 2\n"
         << "set key top left\n"
         << "plot '" << dir << "/sizes.dat' using 1:2 with points pt 7 title 'kvx', '" << dir
         << "/sizes.dat' using 1:($3 < 0 ? NaN : $3) with points pt 6 title 'bare UCP'\n"
         << "unset multiplot\n";
  script.close();
  const int code =
      std::system(fmt::format("gnuplot {}/plot.gp 2>{}/gnuplot.err", dir, dir).c_str());
  std::string error;
  if (code != 0) {
    std::ifstream err(dir + "/gnuplot.err");
    error.assign(std::istreambuf_iterator<char>(err), {});
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  if (code != 0) return internalError("gnuplot failed: " + error);
  return Status::ok();
}

}  // namespace kvx::bench
