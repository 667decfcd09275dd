#include "daemon/agent_config.h"

#include <algorithm>
#include <filesystem>

#include "daemon/block_order.h"
#include "daemon/gpu_memory_options.h"
#include "files/bounded_file.h"
#include "kv/pool/model_shape.h"

namespace kvx::daemon {
namespace {

bool isSet(const std::string& value) { return !value.empty(); }

// What can be checked without the model: the rank within its group.
Status validateTp(const AgentConfig& c) {
  if (c.tpSize == 0) return invalidArgument("--tp-size must be at least 1");
  if (c.tpRank >= c.tpSize) {
    return invalidArgument("--tp-rank " + std::to_string(c.tpRank) +
                           " is not a rank of a group of --tp-size " + std::to_string(c.tpSize) +
                           " (ranks 0 to " + std::to_string(c.tpSize - 1) + ")");
  }
  return Status::ok();
}

// A model shape file is a few hundred bytes of JSON.
constexpr std::uint64_t kMaxModelFileBytes = 1u << 20;

// The --model text KvPoolSpec takes: a built-in name, or the contents of a shape file.
Result<std::string> modelText(const std::string& model) {
  std::error_code error;
  if (std::filesystem::is_regular_file(model, error)) {
    return files::readBoundedFile(model, kMaxModelFileBytes, "--model file");
  }
  if (model.find('/') != std::string::npos || model.ends_with(".json")) {
    return notFound("--model '" + model +
                    "' looks like a file but there is none; give a built-in shape "
                    "(llama3-8b, qwen2.5-32b, llama3-70b, deepseek-v3) or a JSON shape file");
  }
  return model;
}

Result<kv::ModelShape> shapeOfText(const std::string& text) {
  auto shape = kv::shapeFromNameOrJson(text);
  if (!shape.isOk()) return shape.status().withContext("--model");
  return shape;
}

// Where the pool lives and how its GPU memory moves.
Status validateMemory(const AgentConfig& c) {
  return validateGpuMemoryOptions(c.memory, c.device, c.gpuPath, "this pool is");
}

}  // namespace

Status validateAgentConfig(const AgentConfig& c) {
  if (c.role.empty()) return invalidArgument("--role is required: prefill or decode");
  if (c.name.empty()) {
    return invalidArgument("--name is required: a name unique among the agents, e.g. decode-0");
  }
  if (c.listen.find(':') == std::string::npos) {
    return invalidArgument("--listen '" + c.listen + "' is not HOST:PORT (e.g. 127.0.0.1:7001)");
  }
  if (c.blocks == 0) {
    return invalidArgument(
        "--blocks is required: the KV blocks in this agent's pool (e.g. 1024; a llama3-8b "
        "block of 16 tokens is 2 MiB)");
  }
  if (c.model.empty()) return invalidArgument("--model must not be empty");
  KVX_RETURN_IF_ERROR(validateMemory(c));
  const int tlsFiles = int(isSet(c.tlsCert)) + int(isSet(c.tlsKey)) + int(isSet(c.tlsCa));
  if (tlsFiles != 0 && tlsFiles != 3) {
    return invalidArgument(
        "--tls-cert, --tls-key and --tls-ca go together (TLS on the control channel needs this "
        "agent's certificate, its private key and the CA that signs every agent's "
        "certificate); got " +
        std::string(isSet(c.tlsCert) ? "--tls-cert " : "") + (isSet(c.tlsKey) ? "--tls-key " : "") +
        (isSet(c.tlsCa) ? "--tls-ca " : "") + "only");
  }
  if (c.heartbeatIntervalMs < 10 || c.heartbeatIntervalMs >= c.peerTimeoutMs) {
    return invalidArgument("--heartbeat-interval-ms " + std::to_string(c.heartbeatIntervalMs) +
                           " must be at least 10 and below --peer-timeout-ms " +
                           std::to_string(c.peerTimeoutMs) +
                           " (a peer must hear from us more often than it waits; e.g. 500 "
                           "and 2000)");
  }
  const WorkloadConfig& w = c.workload;
  if (c.role == "decode") {
    if (!c.peers.empty()) {
      return invalidArgument(
          "--peer applies to prefill agents (they connect to decode agents); a decode agent "
          "only listens");
    }
    if (w.given()) return invalidArgument("--trace/--synthetic apply to prefill agents only");
    if (w.noFill || isSet(w.requestPrefix)) {
      return invalidArgument("--no-fill and --request-prefix apply to prefill agents only");
    }
    if (c.decodeTp != 1) {
      return invalidArgument(
          "--decode-tp applies to prefill agents (the decode group they send to); a decode "
          "rank gives its own group with --tp-size and --tp-rank");
    }
    if (c.checkFreeBlocks && c.memory != "host") {
      return invalidArgument(
          "--check-free-blocks needs a host pool (--memory host): it reads "
          "the pool's bytes directly");
    }
    return validateTp(c);
  }
  if (c.verify) return invalidArgument("--verify applies to decode agents only");
  if (c.checkFreeBlocks) {
    return invalidArgument("--check-free-blocks applies to decode agents only");
  }
  if (w.synthetic && isSet(w.trace)) {
    return invalidArgument("--trace and --synthetic exclude each other; give one workload");
  }
  if (isSet(c.report) && !w.given()) {
    return invalidArgument("--report needs a workload (--trace FILE or --synthetic)");
  }
  if (w.given() && c.peers.empty()) {
    return invalidArgument("a prefill workload needs at least one --peer (a decode agent)");
  }
  if (w.minTokens == 0 || w.minTokens > w.maxTokens) {
    return invalidArgument("--min-tokens (" + std::to_string(w.minTokens) +
                           ") must be at least 1 and at most --max-tokens (" +
                           std::to_string(w.maxTokens) + ")");
  }
  if (!(w.timeScale > 0)) {
    return invalidArgument("--time-scale must be > 0 (2 replays twice as fast)");
  }
  if (w.maxOutstanding == 0) return invalidArgument("--max-outstanding must be at least 1");
  if (!parseBlockOrder(w.blockOrder)) {
    return invalidArgument("--block-order '" + w.blockOrder + "' is not contiguous or random");
  }
  if (c.decodeTp == 0) return invalidArgument("--decode-tp must be at least 1");
  if ((c.tpSize > 1 || c.decodeTp > 1) && !c.peers.empty() && c.peers.size() != c.decodeTp) {
    return invalidArgument("--decode-tp " + std::to_string(c.decodeTp) + " needs exactly " +
                           std::to_string(c.decodeTp) +
                           " --peer addresses, the decode ranks in order; got " +
                           std::to_string(c.peers.size()));
  }
  return validateTp(c);
}

Result<KvAgentOptions> toKvAgentOptions(const AgentConfig& c) {
  KvAgentOptions options;
  options.agent.name = c.name;
  options.agent.listenAddress = c.listen;
  selectDataPath(options.agent, c.transport);  // validated by --transport's check
  if (!c.netDevices.empty()) options.agent.ucxNetDevices = c.netDevices;
  options.agent.authTokenFile = c.authTokenFile;
  options.agent.allowUnauthenticated = c.insecure;
  options.agent.tls.enabled = isSet(c.tlsCert) && isSet(c.tlsKey) && isSet(c.tlsCa);
  options.agent.tls.certFile = c.tlsCert;
  options.agent.tls.keyFile = c.tlsKey;
  options.agent.tls.caFile = c.tlsCa;
  options.agent.peerTimeout = std::chrono::milliseconds(c.peerTimeoutMs);
  options.agent.heartbeatInterval = std::chrono::milliseconds(c.heartbeatIntervalMs);
  options.role = c.role == "prefill" ? KvRole::kPrefill : KvRole::kDecode;
  options.pool.layout = c.layout;
  options.pool.blocks = c.blocks;
  options.pool.populate = !c.noPopulate;
  options.pool.kind = parseMemoryKind(c.memory).value_or(MemoryKind::kHost);
  options.pool.device = options.pool.kind == MemoryKind::kCuda ? std::max(c.device, 0) : -1;
  options.agent.gpuPath = parseGpuPath(c.gpuPath).value_or(GpuPath::kAuto);
  options.agent.dataProtection =
      parseDataProtection(c.dataProtection).value_or(DataProtection::kAuto);
  options.defaultMode = c.mode == "pull" ? KvMode::kPull : KvMode::kPush;
  options.requestTimeout = std::chrono::milliseconds(c.timeoutMs);
  options.leaseTimeout = std::chrono::milliseconds(c.leaseMs);
  options.maxInFlightBytesPerPeer = c.maxInflightBytes;
  options.maxPushBlocksPerPeer = c.maxPushBlocksPerPeer;
  options.prefixCacheBlocks = c.prefixCacheBlocks;
  options.checkFreeBlocks = c.checkFreeBlocks;
  options.lostPushHold = std::chrono::milliseconds(c.lostPushHoldMs);

  KVX_ASSIGN_OR_RETURN(std::string model, modelText(c.model));
  options.pool.model = model;
  if (c.tpSize > 1 || c.decodeTp > 1) {
    KVX_ASSIGN_OR_RETURN(kv::ModelShape shape, shapeOfText(model));
    KVX_ASSIGN_OR_RETURN(TpPlan plan,
                         makeTpPlan(shape.kvHeads, shape.mla, c.tpSize, c.tpRank, c.decodeTp));
    shape.kvHeads = plan.heads().count;
    options.pool.model = kv::shapeToJson(shape);
  }
  return options;
}

Result<kv::ModelShape> loadModelShape(const std::string& model) {
  KVX_ASSIGN_OR_RETURN(std::string text, modelText(model));
  return shapeOfText(text);
}

Result<TpPlan> tpPlanOf(const AgentConfig& c) {
  KVX_ASSIGN_OR_RETURN(kv::ModelShape shape, loadModelShape(c.model));
  return makeTpPlan(shape.kvHeads, shape.mla, c.tpSize, c.tpRank, c.decodeTp);
}

std::string requestPrefixOf(const AgentConfig& c) {
  if (isSet(c.workload.requestPrefix)) return c.workload.requestPrefix;
  return c.tpSize > 1 || c.decodeTp > 1 ? "prompt" : c.name;
}

}  // namespace kvx::daemon
