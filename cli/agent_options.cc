// The `kvx agent` command-line options, their help, and their KVX_* variables.
#include "cli/agent_options.h"

#include <CLI/CLI.hpp>
#include <cctype>

#include "cli/json_config.h"

namespace kvx::cli {
namespace {

constexpr const char* kDescription =
    "Runs one KV-cache agent (prefill or decode) of a disaggregated LLM server.\n"
    "The agent owns a pool of paged KV blocks registered for RDMA and serves one role:\n"
    "  decode   owns the pool that prompts' KV caches are moved into. It takes each request\n"
    "           whose blocks have all arrived, checks every byte of them with --verify,\n"
    "           then consumes and releases it (its blocks return to the pool).\n"
    "  prefill  connects to decode agents (--peer) and moves prompts' KV blocks to them.\n"
    "           With a workload (--trace FILE or --synthetic) it replays it: allocate\n"
    "           blocks, fill them (deterministic content decode agents can verify), submit,\n"
    "           wait; then writes --report and exits (0 iff every request succeeded).\n"
    "           Without a workload it serves until stopped.\n"
    "Tensor parallelism: --model is the whole model; with --tp-size N --tp-rank R the pool\n"
    "holds the rank's share of its KV heads. A prefill rank sends each prompt's heads to the\n"
    "--decode-tp ranks of one decode instance (its --peer addresses, in rank order), one\n"
    "sliced request per decode rank it overlaps; every prefill rank of the group replays the\n"
    "same workload so that the parts meet on the decode ranks.\n"
    "\n"
    "Output: stdout carries exactly one line 'LISTENING <host:port>' once the agent serves,\n"
    "and one line 'STATS {json}' when it stops (SIGINT/SIGTERM, or the workload's end; with\n"
    "\"error\" and its \"code\" when it could not start, e.g. --gpu-path direct where UCX\n"
    "cannot move GPU memory).\n"
    "Logs go to stderr: peers and their data path, a summary every 5 s while busy, each\n"
    "request at --log-level debug.";

constexpr const char* kFooter =
    "\nExample (three terminals; `kvx demo` does all of this for you):\n"
    "  kvx agent --role decode --name d0 --listen 127.0.0.1:7001 --blocks 1024 --verify\n"
    "  kvx agent --role decode --name d1 --listen 127.0.0.1:7002 --blocks 1024 --verify\n"
    "  kvx agent --role prefill --name p0 --blocks 1024 --peer 127.0.0.1:7001 \\\n"
    "      --peer 127.0.0.1:7002 --synthetic --requests 100 --report report.json\n"
    "\n"
    "Every option can also come from the environment as KVX_<OPTION> (KVX_BLOCKS=1024,\n"
    "KVX_PEERS=127.0.0.1:7001,127.0.0.1:7002) or from a JSON file given with --config\n"
    "({\"blocks\": 1024, \"peers\": [\"127.0.0.1:7001\"]}). The command line wins over the\n"
    "environment, which wins over the file. --print-config shows the result.";

// "--prefix-cache-blocks" -> "KVX_PREFIX_CACHE_BLOCKS"; of several names, the last one.
std::string envNameOf(const std::string& names) {
  std::string name = names.substr(names.rfind(',') == std::string::npos ? 0 : names.rfind(',') + 1);
  name.erase(0, name.find_first_not_of('-'));
  std::string env = "KVX_";
  for (const char c : name) {
    env += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return env;
}

template <typename T>
CLI::Option* addOption(CLI::App& app, const std::string& names, T& value, const std::string& help,
                       const std::string& group) {
  CLI::Option* option = app.add_option(names, value, help);
  option->envname(envNameOf(names))->group(group);
  option->capture_default_str();
  return option;
}

CLI::Option* addFlag(CLI::App& app, const std::string& name, bool& value, const std::string& help,
                     const std::string& group) {
  return app.add_flag(name, value, help)->envname(envNameOf(name))->group(group);
}

}  // namespace

void addAgentOptions(CLI::App& app, AgentConfig& c) {
  app.description(kDescription);
  app.footer(kFooter);
  const std::string agent = "Agent";
  addOption(app, "--role", c.role, "prefill or decode (required)", agent)
      ->check(CLI::IsMember({"prefill", "decode"}));
  addOption(app, "--name", c.name, "this agent's name, unique among its peers (required)", agent);
  addOption(app, "--listen", c.listen,
            "control address HOST:PORT to listen on (port 0: any free port; printed as "
            "LISTENING)",
            agent);
  addOption(app, "--log-level", c.logLevel, "stderr log level", agent)
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  app.add_option("--config", c.configFile,
                 "JSON file with option values ({\"blocks\": 1024, ...}); env KVX_CONFIG")
      ->envname("KVX_CONFIG")
      ->configurable(false)
      ->group(agent);
  app.add_flag("--print-config", c.printConfig,
               "print the effective configuration as JSON and exit")
      ->configurable(false)
      ->group(agent);

  const std::string control = "Control channel";
  addOption(app, "--auth-token-file", c.authTokenFile,
            "file holding the shared secret peers must prove they hold (the same on every "
            "agent; e.g. `openssl rand -hex 32 > FILE; chmod 600 FILE`); without it "
            "KVX_AUTH_TOKEN is used, and without either the control channel is "
            "unauthenticated and --listen must be a loopback address",
            control);
  addFlag(app, "--insecure", c.insecure,
          "allow an unauthenticated control channel on a non-loopback --listen address (any "
          "host that reaches it can join)",
          control);
  const std::string tlsTogether =
      " (with --tls-key and --tls-ca: all three turn on TLS with mutual certificate "
      "authentication on the control channel; peers' certificates must chain to --tls-ca, "
      "with no host name check; any --listen address is then allowed)";
  addOption(app, "--tls-cert", c.tlsCert,
            "PEM file: this agent's TLS certificate, then any intermediate CAs" + tlsTogether,
            control);
  addOption(app, "--tls-key", c.tlsKey,
            "PEM file: the certificate's private key, unencrypted (chmod 600)", control);
  addOption(app, "--tls-ca", c.tlsCa,
            "PEM file: the CA certificate(s) every peer's certificate must chain to", control);
  addOption(app, "--peer-timeout-ms", c.peerTimeoutMs,
            "a peer silent this long (no heartbeat or other frame) is declared failed", control);
  addOption(app, "--heartbeat-interval-ms", c.heartbeatIntervalMs,
            "how often to send peers a heartbeat (at least 10, below --peer-timeout-ms)", control);

  const std::string pool = "KV pool";
  addOption(app, "--model", c.model,
            "model shape: llama3-8b, qwen2.5-32b, llama3-70b, deepseek-v3, or a JSON shape "
            "file ({\"name\", \"layers\", \"kvHeads\", \"headDim\", \"dtypeBytes\", "
            "\"tokensPerBlock\", \"mla\"})",
            pool);
  addOption(app, "--layout", c.layout, "pool layout", pool)
      ->check(CLI::IsMember({"nhd", "hnd", "blocks-first", "cross-layer"}));
  addOption(app, "--blocks", c.blocks,
            "KV blocks in the pool (required; a llama3-8b block is 16 tokens = 2 MiB)", pool)
      ->check(CLI::PositiveNumber);
  addFlag(app, "--no-populate", c.noPopulate,
          "do not populate the pool's pages at start-up: first transfers fault them in (for "
          "pools far larger than what will be used at once)",
          pool);
  addOption(app, "--memory", c.memory,
            "where the pool lives: host, or cuda (device memory of --device; filled and "
            "verified through copies)",
            pool)
      ->check(CLI::IsMember({"host", "cuda"}));
  addOption(app, "--device", c.device,
            "with --memory cuda: the CUDA device of the pool (-1: not given, device 0)", pool);
  addOption(app, "--gpu-path", c.gpuPath,
            "with --memory cuda: how the pool's GPU memory moves: auto (directly when UCX can "
            "move CUDA memory, else staged through pinned host buffers), direct (GPUDirect or "
            "fail at start-up with the reason), staged (always through host buffers)",
            pool)
      ->check(CLI::IsMember({"auto", "direct", "staged"}));
  addOption(app, "--prefix-cache-blocks", c.prefixCacheBlocks,
            "decode: released blocks kept for prefix reuse (0: no prefix cache)", pool);

  const std::string tp = "Tensor parallelism";
  addOption(app, "--tp-size", c.tpSize,
            "ranks of this agent's TP group; the pool holds 1/N of --model's KV heads (N must "
            "divide them)",
            tp);
  addOption(app, "--tp-rank", c.tpRank,
            "this agent's rank in its TP group (0 to N-1): global heads [R*H/N, (R+1)*H/N)", tp);
  addOption(app, "--decode-tp", c.decodeTp,
            "prefill: ranks of the decode instance; the --peer addresses are its ranks 0..M-1 "
            "in order (1 with --tp-size 1: whole requests, the scheduler chooses the peer)",
            tp);

  const std::string transfer = "Transfers";
  addOption(app, "--peer,--peers", c.peers,
            "prefill: a decode agent's HOST:PORT to connect to (repeat, or comma-separate)",
            transfer)
      ->delimiter(',');
  addOption(app, "--net-devices", c.netDevices,
            "the data path's network interfaces (UCX_NET_DEVICES's form: \"eth0\", "
            "\"mlx5_0:1,eth1\", \"all\"), or auto (the default): loopback for an agent "
            "without a token or TLS, else every interface that is up. An explicit "
            "UCX_NET_DEVICES wins",
            transfer);
  addOption(app, "--data-protection", c.dataProtection,
            "socket transport: headers (every request authenticated, its header encrypted; "
            "blocks in clear), authenticated (blocks tagged too), encrypted (blocks encrypted "
            "too), or auto (KVX_DATA_PROTECTION if set, else encrypted when a token or TLS "
            "lets peers be on other hosts, headers otherwise)",
            transfer)
      ->check(CLI::IsMember({"auto", "headers", "authenticated", "encrypted"}));
  addOption(app, "--transport", c.transport,
            "data path: shm or tcp (UCX over shared memory or tcp), or socket (kvx's own TCP "
            "transport, no UCX)",
            transfer)
      ->check(CLI::IsMember({"shm", "tcp", "socket"}));
  addOption(app, "--mode", c.mode,
            "push (prefill writes), pull (decode reads), or mixed (a prefill workload "
            "alternates by request)",
            transfer)
      ->check(CLI::IsMember({"push", "pull", "mixed"}));
  addOption(app, "--lease-ms", c.leaseMs,
            "decode: reclaim blocks of a request not completed/consumed this long", transfer);
  addOption(app, "--timeout-ms", c.timeoutMs, "prefill: a request's deadline, submit to confirmed",
            transfer);
  addOption(app, "--connect-timeout-ms", c.connectTimeoutMs,
            "prefill: how long to keep retrying --peer (decode agents may start later)", transfer);
  addOption(app, "--max-inflight-bytes", c.maxInflightBytes,
            "prefill: bytes in flight per decode agent (admission control), e.g. 1G", transfer)
      ->transform(CLI::AsSizeValue(false));

  const std::string decode = "Decode";
  addFlag(app, "--verify", c.verify,
          "check every block of every arrival against the content prefill agents write", decode);
  addFlag(app, "--check-free-blocks", c.checkFreeBlocks,
          "host pools: fill every freed block with a pattern and check it when the block is "
          "placed again and at exit; a changed block is a late write (logged, counted in "
          "STATS lateWrites). For fault drills: costs a write and a read of every block",
          decode);
  addOption(app, "--lost-push-hold-ms", c.lostPushHoldMs,
            "decode: keep the blocks of a lost prefill agent's push out of the pool this long "
            "after its data path closed (0: return them at once; fault drills)",
            decode)
      ->capture_default_str();
  addOption(app, "--max-push-blocks-per-peer", c.maxPushBlocksPerPeer,
            "decode: the most blocks one prefill agent may be pushing into, or have held for it "
            "after it was lost; a request beyond it is refused at placement (0: no cap). "
            "SIGUSR1 gives back the blocks held for lost agents that never proved they stopped",
            decode);

  daemon::WorkloadConfig& w = c.workload;
  const std::string workload = "Prefill workload";
  addOption(app, "--trace", w.trace, "replay a JSONL trace (Mooncake format)", workload);
  addFlag(app, "--synthetic", w.synthetic, "replay a generated trace (options below)", workload);
  addOption(app, "--requests", w.requests,
            "synthetic: request count (0: 100); with --trace: replay only the first N (0: all)",
            workload);
  addOption(app, "--seed", w.seed, "synthetic: generator seed", workload);
  addOption(app, "--rate", w.rate, "synthetic: arrivals per second (0: all at once)", workload)
      ->check(CLI::NonNegativeNumber);
  addOption(app, "--min-tokens", w.minTokens, "synthetic: shortest prompt", workload);
  addOption(app, "--max-tokens", w.maxTokens, "synthetic: longest prompt (log-uniform)", workload);
  addOption(app, "--prefix-share", w.prefixShare,
            "synthetic: probability a prompt starts with a shared prefix", workload)
      ->check(CLI::Range(0.0, 1.0));
  addOption(app, "--clip-tokens", w.clipTokens,
            "with --trace: cut longer prompts to this many tokens (0: keep them whole)", workload);
  addOption(app, "--time-scale", w.timeScale, "replay speed: timestamps are divided by it",
            workload);
  addOption(app, "--max-outstanding", w.maxOutstanding, "requests in flight at most", workload);
  addOption(app, "--layerwise", w.layerwise,
            "send each layer as the simulated prefill finishes it: on, off, or mixed", workload)
      ->check(CLI::IsMember({"on", "off", "mixed"}));
  addOption(app, "--layer-ms", w.layerMs, "simulated prefill compute per layer, in ms", workload)
      ->check(CLI::NonNegativeNumber);
  addOption(app, "--block-order", w.blockOrder,
            "source blocks of a request as allocated (contiguous) or shuffled so that no two "
            "coalesce (random, seeded by --seed and the request)",
            workload)
      ->check(CLI::IsMember({"contiguous", "random"}));
  addFlag(app, "--no-fill", w.noFill,
          "do not write the KV content (saves CPU in benchmarks); decode agents must then run "
          "without --verify",
          workload);
  addOption(app, "--request-prefix", w.requestPrefix,
            "request ids are <prefix>-<index> (default: --name; with TP slicing: 'prompt', the "
            "same on every rank of the group)",
            workload);
  addOption(app, "--report", c.report,
            "when the agent stops, write a JSON report here: prefill: every request (ids, "
            "timing, bytes); decode: every arrival",
            agent);
}

Status finishAgentConfig(CLI::App& app, AgentConfig& config) {
  if (!config.configFile.empty()) KVX_RETURN_IF_ERROR(applyConfigFile(app, config.configFile));
  return validateAgentConfig(config);
}

Result<AgentConfig> parseAgentConfig(const std::vector<std::string>& args) {
  CLI::App app{"kvx agent"};
  AgentConfig config;
  addAgentOptions(app, config);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 pops from the back
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return invalidArgument(e.what());
  }
  KVX_RETURN_IF_ERROR(finishAgentConfig(app, config));
  return config;
}

std::string configJson(const CLI::App& app) {
  return JsonConfig().to_config(&app, true, false, "");
}

}  // namespace kvx::cli
