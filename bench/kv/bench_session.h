#pragma once

// BenchSession: runs a list of cases one after another: the kvx case (real agent processes),
// then, where the case has one, the bare UCP loop matched to what kvx put on the wire. One
// thing at a time, so neither competes with the other for this machine's cores. Progress
// goes to stderr, one line per case with a bar, since a run takes minutes.
//
// One owner thread.

#include <functional>
#include <string>
#include <vector>

#include "bench/kv/case_outcome.h"
#include "bench/kv/case_runner.h"

namespace kvx::bench {

struct SessionOptions {
  CaseRunnerOptions runner;
  std::string bareBinary;  // kvx-bare-ucp; empty: no bare reference
  bool progress = true;
};

class BenchSession {
 public:
  explicit BenchSession(SessionOptions options) : options_(std::move(options)) {}

  // `stopRequested` is polled between cases. A case an agent refused to start with
  // FAILED_PRECONDITION (a configuration it cannot have) ends the run there.
  std::vector<CaseOutcome> run(const std::vector<BenchCase>& cases,
                               const std::function<bool()>& stopRequested) const;

 private:
  CaseOutcome runOne(const BenchCase& c) const;
  SessionOptions options_;
};

}  // namespace kvx::bench
