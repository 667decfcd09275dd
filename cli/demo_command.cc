#include "cli/demo_command.h"

#include <CLI/CLI.hpp>

#include "cli/agents_gpu_options.h"
#include "demo/demo_run.h"

namespace kvx::cli {

void addDemoOptions(CLI::App& app, DemoOptions& o) {
  app.description(
      "Runs a prefill agent and two decode agents here and reports on the KV migration.\n"
      "With --prefill-tp/--decode-tp it runs a tensor-parallel prefill instance and decode\n"
      "instance instead, one agent per rank, and each prompt's KV heads are sliced between\n"
      "them (gathers and scatters); every decode rank verifies its heads.\n"
      "The agents are separate `kvx agent` processes on 127.0.0.1; the prefill agent\n"
      "replays a workload, every moved block is verified on arrival, and the report shows\n"
      "requests ok/failed, latency and queueing percentiles, GB/s, descriptors vs operations\n"
      "on the wire, placement decisions, prefix reuse, corrupt blocks, and whether every pool\n"
      "got all its blocks back. Exit code 0 only if all of that is clean.");
  app.footer(
      "\nThe agents get every option from here: KVX_* variables are not passed on to them.\n"
      "\nExamples:\n  kvx demo\n  kvx demo --requests 50 --transport tcp --mode pull\n"
      "  kvx demo --trace conversation_trace.jsonl --requests 100 --time-scale 4\n"
      "  kvx demo --prefill-tp 2 --decode-tp 4\n"
      "  kvx demo --memory cuda --gpu-path staged\n");
  auto* requests =
      app.add_option("--requests", o.requests, "requests (with --trace: the first N of the trace)");
  requests->capture_default_str();
  app.add_option("--seed", o.seed, "synthetic workload seed")->capture_default_str();
  app.add_option("--model", o.model, "model shape (built-in name or JSON file)")
      ->capture_default_str();
  app.add_option("--layout", o.layout, "pool layout")
      ->check(CLI::IsMember({"nhd", "hnd", "blocks-first", "cross-layer"}))
      ->capture_default_str();
  app.add_option("--transport", o.transport, "shm, tcp (UCX) or socket (kvx's own TCP)")
      ->check(CLI::IsMember({"shm", "tcp", "socket"}))
      ->capture_default_str();
  app.add_option("--mode", o.mode, "push, pull or mixed (alternating)")
      ->check(CLI::IsMember({"push", "pull", "mixed"}))
      ->capture_default_str();
  app.add_option("--layerwise", o.layerwise, "on, off or mixed")
      ->check(CLI::IsMember({"on", "off", "mixed"}))
      ->capture_default_str();
  app.add_option("--trace", o.trace, "replay this JSONL trace instead of a synthetic one");
  app.add_option("--time-scale", o.timeScale, "replay speed-up")->capture_default_str();
  app.add_option("--rate", o.rate,
                 "synthetic arrivals per second (-1: 100, or 5 with gathers, --prefill-tp > "
                 "--decode-tp, which stall when the decode pools fill up: see docs/kv.md)")
      ->capture_default_str();
  app.add_option("--min-tokens", o.minTokens, "synthetic: shortest prompt")->capture_default_str();
  app.add_option("--max-tokens", o.maxTokens, "synthetic: longest prompt")->capture_default_str();
  app.add_option("--prefix-share", o.prefixShare, "synthetic: share of prompts with a prefix")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--layer-ms", o.layerMs, "simulated prefill compute per layer")
      ->capture_default_str();
  app.add_option("--max-outstanding", o.maxOutstanding, "requests in flight at most")
      ->capture_default_str();
  app.add_option("--prefill-tp", o.prefillTp,
                 "prefill TP ranks (1, 2, 4, 8 for llama3-8b's 8 KV heads); above 1, or with "
                 "--decode-tp above 1: one agent per rank, sliced requests")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--decode-tp", o.decodeTp, "decode TP ranks (likewise)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--decode-blocks", o.decodeBlocks,
                 "blocks per decode pool (a rank's, with TP); 0: 1024, or 2048 with TP")
      ->capture_default_str();
  app.add_option("--prefill-blocks", o.prefillBlocks,
                 "blocks per prefill pool (a rank's, with TP); 0: 1024, more for scatters "
                 "(each request of a prompt has its own source blocks)")
      ->capture_default_str();
  app.add_option("--prefix-cache-blocks", o.prefixCacheBlocks,
                 "decode: blocks kept for prefix reuse")
      ->capture_default_str();
  app.add_option("--timeout-s", o.timeoutSeconds, "deadline for the replay")->capture_default_str();
  app.add_option("--log-level", o.logLevel, "the agents' stderr log level")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app.add_option("--json", o.json, "also write the report as JSON to this file");
  addAgentsGpuMemoryOptions(app, o.memory, o.device, o.gpuPath,
                            "where every agent's pool lives: host, or cuda (GPU memory; each "
                            "agent's data path with each peer is in the report)");
}

int runDemoCommand(const DemoOptions& o, daemon::StopSignal& stop) {
  return demo::runDemo(o, stop);
}

}  // namespace kvx::cli
