#include "bench/kv/bench_session.h"

#include <fmt/format.h>

#include <cstdio>

#include "bench/bare/bare_ucp_runner.h"
#include "bench/kv/bare_match.h"

namespace kvx::bench {
namespace {

std::string bar(std::size_t done, std::size_t total) {
  constexpr std::size_t kWidth = 20;
  const std::size_t filled = total == 0 ? kWidth : done * kWidth / total;
  return "[" + std::string(filled, '#') + std::string(kWidth - filled, '.') + "]";
}

}  // namespace

CaseOutcome BenchSession::runOne(const BenchCase& c) const {
  CaseOutcome o;
  o.benchCase = c;
  CaseRunner runner(options_.runner);
  auto run = runner.run(c);
  if (!run.isOk()) {
    o.error = run.status();
    return o;
  }
  o.kvx = std::move(run).value();
  if (!c.bareReference || options_.bareBinary.empty() || o.kvx->metrics.released == 0) return o;
  const BareUcpOptions bareOptions = matchingBare(c, o.kvx->metrics, o.kvx->segmentBytes);
  auto bare = runBareUcp(bareOptions, options_.bareBinary);
  if (bare.isOk()) {
    o.bare = std::move(bare).value();
    if (!o.bare->verify.ok && o.bare->verify.checked) {
      o.bareError = internalError("the bare loop's bytes did not verify: " + o.bare->verify.detail);
    }
  } else {
    o.bareError = bare.status();
  }
  return o;
}

std::vector<CaseOutcome> BenchSession::run(const std::vector<BenchCase>& cases,
                                           const std::function<bool()>& stopRequested) const {
  std::vector<CaseOutcome> outcomes;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (stopRequested()) break;
    const BenchCase& c = cases[i];
    if (options_.progress) {
      std::fprintf(stderr, "%s %zu/%zu %s: %s ...\n", bar(i, cases.size()).c_str(), i + 1,
                   cases.size(), c.scenario.c_str(), c.label.c_str());
    }
    outcomes.push_back(runOne(c));
    const CaseOutcome& o = outcomes.back();
    if (!o.kvx && o.error.code() == StatusCode::kFailedPrecondition) {
      // An agent refused the configuration itself (--gpu-path direct where UCX cannot move
      // GPU memory): every later case would be refused the same way.
      std::fprintf(stderr, "    failed to run: %s\nkvx bench: stopping: %zu case(s) not run\n",
                   o.error.toString().c_str(), cases.size() - i - 1);
      break;
    }
    if (!options_.progress) continue;
    if (!o.kvx) {
      std::fprintf(stderr, "    failed to run: %s\n", o.error.toString().c_str());
    } else {
      std::fprintf(
          stderr, "    kvx %.2f GB/s%s, %llu/%llu released%s\n", o.kvx->metrics.gbps,
          o.bare ? fmt::format(", bare {:.2f} GB/s, ratio {:.2f}", o.bare->gbps, o.ratio()).c_str()
                 : "",
          static_cast<unsigned long long>(o.kvx->metrics.released),
          static_cast<unsigned long long>(o.kvx->metrics.requests),
          o.clean() ? "" : " - NOT CLEAN");
    }
  }
  if (options_.progress) {
    std::fprintf(stderr, "%s %zu/%zu done\n", bar(outcomes.size(), cases.size()).c_str(),
                 outcomes.size(), cases.size());
  }
  return outcomes;
}

}  // namespace kvx::bench
