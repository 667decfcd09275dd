#include "bench/kv/scenarios.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace kvx::bench {
namespace {

// Llama-3.1-70B with all 8 KV heads (the built-in "llama3-70b" is one TP8 rank's share).
const char* kLlama70bAllHeads =
    R"({"name":"llama3-70b","layers":80,"kvHeads":8,"headDim":128,"dtypeBytes":2,"tokensPerBlock":16})";
// One-token pages (SGLang): 2 KiB per (layer, K or V) for Llama-3.1-8B; one TP8 rank: 256 B.
const char* kLlama8bPage1 =
    R"({"name":"llama3-8b-page1","layers":32,"kvHeads":8,"headDim":128,"dtypeBytes":2,"tokensPerBlock":1})";
const char* kLlama8bPage1Tp8 =
    R"({"name":"llama3-8b-page1-tp8","layers":32,"kvHeads":1,"headDim":128,"dtypeBytes":2,"tokensPerBlock":1})";

constexpr std::uint64_t kMiB = 1ull << 20;

struct Builder {
  const ScenarioOptions& options;
  std::string scenario;
  std::vector<BenchCase> cases;

  bool quick() const { return options.size == ScenarioSize::kQuick; }
  bool full() const { return options.size == ScenarioSize::kFull; }

  // Caps the window so that `window + 1` requests of `requestBytes` fit the pool budget.
  std::uint64_t fitWindow(std::uint64_t window, std::uint64_t requestBytes) const {
    const std::uint64_t fits =
        options.poolBudgetMiB * kMiB / std::max<std::uint64_t>(1, requestBytes);
    return std::max<std::uint64_t>(1, std::min(window, fits > 1 ? fits - 1 : 1));
  }
  // Enough requests for steady state: 2 windows, at least `minimum`, about `bytesTarget`.
  static std::uint64_t requestCount(std::uint64_t window, std::uint64_t requestBytes,
                                    std::uint64_t bytesTarget, std::uint64_t minimum) {
    const std::uint64_t byBytes = bytesTarget / std::max<std::uint64_t>(1, requestBytes);
    return std::max({2 * window, minimum, byBytes});
  }
  void add(BenchCase c) {
    c.scenario = scenario;
    c.verify = options.verify;
    c.poolBudgetBytes = options.poolBudgetMiB * kMiB;
    c.smoke = quick();
    for (const std::string& transport : options.transports) {
      BenchCase t = c;
      t.transport = transport;
      if (options.transports.size() > 1) t.label = transport + " " + t.label;
      cases.push_back(std::move(t));
    }
  }
};

std::string tokensLabel(std::uint64_t tokens) {
  return tokens % 1024 == 0 ? std::to_string(tokens / 1024) + "k" : std::to_string(tokens);
}

void llama8b(Builder& b) {
  std::vector<std::uint64_t> sizes = {1024, 4096, 16384}, windows = {1, 8};
  if (b.full()) sizes = {1024, 4096, 16384, 32768}, windows = {1, 8, 32};
  if (b.quick()) sizes = {64}, windows = {1, 4};
  for (std::uint64_t tokens : sizes) {
    const std::uint64_t bytes = tokens * 128 * 1024;
    std::set<std::uint64_t> measured;
    for (std::uint64_t w : windows) {
      const std::uint64_t window = b.fitWindow(w, bytes);
      if (!measured.insert(window).second) continue;  // capped to a window measured already
      for (const char* order : {"contiguous", "random"}) {
        for (const char* mode : {"push", "pull"}) {
          BenchCase c;
          c.label = fmt::format("{} w{} {} {}", tokensLabel(tokens), window, mode, order);
          c.tokens = tokens;
          c.window = window;
          c.mode = mode;
          c.blockOrder = order;
          c.requests = b.quick() ? 4 : Builder::requestCount(window, bytes, 2048 * kMiB, 4);
          b.add(c);
        }
      }
    }
  }
}

void llama70bTp8(Builder& b) {
  const std::uint64_t tokens = b.quick() ? 64 : 4096;
  for (std::uint64_t window : {std::uint64_t{1}, std::uint64_t{8}}) {
    if (b.quick() && window > 1) continue;
    for (const char* order : {"contiguous", "random"}) {
      for (const char* mode : {"push", "pull"}) {
        BenchCase c;
        c.model = "llama3-70b";
        c.label = fmt::format("{} w{} {} {}", tokensLabel(tokens), window, mode, order);
        c.tokens = tokens;
        c.window = window;
        c.mode = mode;
        c.blockOrder = order;
        c.requests =
            b.quick() ? 4 : Builder::requestCount(window, tokens * 320 * 1024, kMiB << 10, 8);
        b.add(c);
      }
    }
  }
}

void heteroTp(Builder& b) {
  const std::uint64_t tokens = b.quick() ? 64 : 2048;
  for (auto [prefillTp, decodeTp] : {std::pair{4u, 8u}, std::pair{8u, 4u}}) {
    for (const char* mode : {"push", "pull"}) {
      BenchCase c;
      c.model = kLlama70bAllHeads;
      c.layout = "hnd";
      c.label = fmt::format("TP{}->TP{} {} {}", prefillTp, decodeTp, tokensLabel(tokens), mode);
      c.tokens = tokens;
      c.window = 2;
      c.requests = b.quick() ? 2 : 6;
      c.mode = mode;
      c.prefillTp = prefillTp;
      c.decodeTp = decodeTp;
      c.bareReference = false;  // several senders and receivers: no single bare loop matches
      b.add(c);
    }
  }
}

void mla(Builder& b) {
  const std::uint64_t tokens = b.quick() ? 128 : 4096;
  for (std::uint64_t window : {std::uint64_t{1}, std::uint64_t{8}}) {
    if (b.quick() && window > 1) continue;
    for (const char* mode : {"push", "pull"}) {
      BenchCase c;
      c.model = "deepseek-v3";
      c.label = fmt::format("{} w{} {}", tokensLabel(tokens), window, mode);
      c.tokens = tokens;
      c.window = window;
      c.mode = mode;
      c.requests = b.quick() ? 4 : Builder::requestCount(window, tokens * 70272, kMiB << 10, 8);
      b.add(c);
    }
  }
  BenchCase one;  // the fixed overhead: one block, one at a time
  one.model = "deepseek-v3";
  one.label = "1 block w1 push (fixed overhead)";
  one.tokens = 64;
  one.window = 1;
  one.fixedOverhead = true;
  one.requests = b.quick() ? 10 : 200;
  b.add(one);
}

void longContext(Builder& b) {
  std::vector<std::uint64_t> sizes = {32768};
  if (b.full()) sizes = {32768, 65536};
  if (b.quick()) sizes = {256};
  for (std::uint64_t tokens : sizes) {
    for (const char* mode : {"push", "pull"}) {
      BenchCase c;
      c.layout = "cross-layer";
      c.label = fmt::format("{} w1 {}", tokensLabel(tokens), mode);
      c.tokens = tokens;
      c.window = 1;
      c.mode = mode;
      c.requests = b.quick() ? 2 : 3;
      b.add(c);
    }
  }
}

void trace(Builder& b) {
  // At 1x the first 60 requests of the conversation trace offer ~5.5 GB/s, a third of what
  // shared memory moves here; at 4x ~22 GB/s, more than it moves, so queues grow.
  std::vector<double> scales = {1, 4};
  if (b.quick()) scales = {4};
  if (b.full()) scales = {1, 4, 16};
  for (double scale : scales) {
    BenchCase c;
    c.label = fmt::format("{}x w{} push", scale, b.quick() ? 4 : 32);
    c.trace = b.options.trace;
    c.timeScale = scale;
    c.window = b.quick() ? 4 : 32;
    c.requests = b.quick() ? 8 : 60;
    c.prefixCacheBlocks = 1024;
    c.bareReference = false;
    // Pools sized for prompts this long (within the budget); longer ones are cut to fit.
    c.tokens = b.quick() ? 4096 : 32768;
    c.populate = !b.quick();  // a smoke run: its figures do not count
    b.add(c);
  }
}

void incast(Builder& b) {
  const std::uint64_t tokens = b.quick() ? 64 : 2048;
  const std::vector<std::pair<std::uint32_t, std::uint32_t>> shapes =
      b.quick() ? std::vector<std::pair<std::uint32_t, std::uint32_t>>{{4, 1}}
                : std::vector<std::pair<std::uint32_t, std::uint32_t>>{{4, 1}, {8, 1}, {1, 4}};
  for (auto [prefills, decodes] : shapes) {
    BenchCase c;
    c.label = fmt::format("{} -> {} {} w4 push", prefills, decodes, tokensLabel(tokens));
    c.tokens = tokens;
    c.window = 4;
    c.prefills = prefills;
    c.decodes = decodes;
    c.requests = b.quick() ? 4 : 12;
    b.add(c);
  }
}

void layerwise(Builder& b) {
  const std::uint64_t tokens = b.quick() ? 64 : 4096;
  for (bool layered : {false, true}) {
    BenchCase c;
    c.label =
        layered ? fmt::format("{} layer-wise, {} ms/layer", tokensLabel(tokens), b.options.layerMs)
                : fmt::format("{} whole (transfer alone)", tokensLabel(tokens));
    c.tokens = tokens;
    c.window = 1;
    c.layerwise = layered;
    c.layerMs = layered ? b.options.layerMs : 0;
    c.requests = b.quick() ? 2 : 6;
    c.bareReference = !layered;
    b.add(c);
  }
}

void tokenPages(Builder& b) {
  const std::uint64_t tokens = b.quick() ? 32 : 1024;
  for (auto [model, name] :
       {std::pair{kLlama8bPage1, "2 KiB"}, std::pair{kLlama8bPage1Tp8, "256 B"}}) {
    for (const char* order : {"contiguous", "random"}) {
      BenchCase c;
      c.model = model;
      c.label = fmt::format("{} pages {} {}", name, tokensLabel(tokens), order);
      c.tokens = tokens;
      c.window = 4;
      c.blockOrder = order;
      c.requests = b.quick() ? 4 : 16;
      b.add(c);
    }
  }
}

const std::map<std::string, std::function<void(Builder&)>>& catalogue() {
  static const std::map<std::string, std::function<void(Builder&)>> scenarios = {
      {"llama8b", llama8b}, {"llama70b-tp8", llama70bTp8}, {"hetero-tp", heteroTp},
      {"mla", mla},         {"long-context", longContext}, {"trace", trace},
      {"incast", incast},   {"layerwise", layerwise},      {"token-pages", tokenPages}};
  return scenarios;
}

}  // namespace

std::vector<std::string> scenarioNames() {
  std::vector<std::string> names;
  for (const auto& [name, build] : catalogue()) names.push_back(name);
  return names;
}

Result<std::vector<BenchCase>> scenarioCases(const std::string& name,
                                             const ScenarioOptions& options) {
  auto it = catalogue().find(name);
  if (it == catalogue().end()) {
    std::string known;
    for (const std::string& n : scenarioNames()) known += (known.empty() ? "" : ", ") + n;
    return notFound("no scenario '" + name + "'; the scenarios are: " + known);
  }
  if (name == "trace" && options.trace.empty()) {
    return invalidArgument(
        "scenario 'trace' replays a JSONL trace: give it with --trace FILE (fields timestamp, "
        "input_length, output_length, hash_ids)");
  }
  Builder builder{options, name, {}};
  it->second(builder);
  return std::move(builder.cases);
}

}  // namespace kvx::bench
