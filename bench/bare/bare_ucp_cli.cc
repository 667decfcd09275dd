#include "bench/bare/bare_ucp_cli.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>

namespace kvx::bench {
namespace {

std::string number(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

}  // namespace

Result<BareUcpCommandLine> parseBareUcpCommandLine(const std::vector<std::string>& args) {
  BareUcpCommandLine line;
  BareUcpOptions& o = line.options;
  std::string role = "initiator", op = "put", pattern = "contiguous", alloc = "registered";
  std::string memory = "host";

  CLI::App app(
      "kvx-bare-ucp: the bare UCP put/get reference for kvx bench (same UCX settings "
      "as kvx, its own two processes)",
      "kvx-bare-ucp");
  // A later occurrence of an option overrides an earlier one, as in most tools.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--role", role, "initiator (default) or target (internal)")
      ->check(CLI::IsMember({"initiator", "target"}));
  app.add_option("--transport", o.transport, "shm or tcp (kvx's names)")->capture_default_str();
  app.add_option("--net-devices", o.netDevices, "UCX_NET_DEVICES, as kvx's ucxNetDevices")
      ->capture_default_str();
  app.add_option("--alloc", alloc, "registered (ucp_mem_map of our memory) or ucx (allocated)")
      ->capture_default_str();
  app.add_option("--memory", memory, "host or cuda: where both buffers live")
      ->capture_default_str();
  app.add_option("--device", o.device, "CUDA device of --memory cuda")->capture_default_str();
  app.add_option("--op", op, "put or get")->capture_default_str();
  app.add_option("--segment-bytes", o.segmentBytes, "S: bytes per op (multiple of 8)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--segments", o.segments, "K: ops per request")->capture_default_str();
  app.add_option("--window", o.window, "W: requests in flight")->capture_default_str();
  app.add_option("--requests", o.requests, "N: measured requests")->capture_default_str();
  app.add_option("--seconds", o.seconds, "post requests for this long instead of --requests");
  app.add_option("--warmup", o.warmupRequests, "unmeasured requests first")->capture_default_str();
  app.add_option("--pattern", pattern, "contiguous or random slots")->capture_default_str();
  app.add_option("--buffer-bytes", o.bufferBytes,
                 "B: buffer per process (0: max(256 MiB, 2*W*K*S))")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--target-spin-us", o.targetSpinUs,
                 "target polls this long after its last event before sleeping on the event fd")
      ->capture_default_str();
  app.add_option("--initiator-cpu", o.initiatorCpu, "pin the initiator to this CPU (-1: no)")
      ->capture_default_str();
  app.add_option("--target-cpu", o.targetCpu, "pin the target to this CPU (-1: no)")
      ->capture_default_str();
  app.add_flag("--notify", o.notify, "flush then a small AM after each request");
  app.add_flag("--fixed-overhead", o.fixedOverhead,
               "one request (K S-byte puts + flush + AM) at a time (window 1), the next once "
               "the target acknowledged it: post -> receiver latency");
  bool noVerify = false;
  app.add_flag("--no-verify", noVerify, "skip the checksums of both buffers at the end");
  app.add_flag("--memcpy", o.memcpyReference, "also measure memcpy of S-byte pieces from DRAM");
  app.add_flag("--memcpy-only", o.memcpyOnly, "measure only memcpy (no UCX, no target)");
  app.add_option("--memcpy-seconds", o.memcpySeconds, "how long memcpy copies")
      ->capture_default_str();
  app.add_option("--timeout-s", o.timeoutSeconds, "deadline for the whole run")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "random slot sequence seed")->capture_default_str();
  app.add_flag("--skip-data", o.skipData,
               "post no RMA ops: with --fixed-overhead, flush + AM alone; tests")
      ->group("");
  app.add_option("--json", line.jsonFile, "also write the JSON result to FILE");
  app.add_flag("--quiet", line.quiet, "no summary line on stderr");

  std::vector<std::string> argvText{"kvx-bare-ucp"};
  argvText.insert(argvText.end(), args.begin(), args.end());
  std::vector<const char*> argv;
  for (const std::string& a : argvText) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp&) {
    line.helpRequested = true;
    line.helpText = app.help();
    return line;
  } catch (const CLI::ParseError& e) {
    return invalidArgument("kvx-bare-ucp: " + std::string(e.what()));
  }
  line.role = role == "target" ? BareRole::kTarget : BareRole::kInitiator;
  o.verify = !noVerify;
  KVX_ASSIGN_OR_RETURN(o.op, parseBareOp(op));
  KVX_ASSIGN_OR_RETURN(o.pattern, parseSlotPattern(pattern));
  KVX_ASSIGN_OR_RETURN(o.alloc, parseBufferAlloc(alloc));
  const std::optional<MemoryKind> kind = parseMemoryKind(memory);
  if (!kind) return invalidArgument("kvx-bare-ucp: --memory '" + memory + "': use host or cuda");
  o.memory = *kind;
  KVX_RETURN_IF_ERROR(validate(o));
  return line;
}

std::vector<std::string> toArguments(const BareUcpOptions& o) {
  const std::pair<const char*, std::string> values[] = {
      {"--transport", o.transport},
      {"--net-devices", o.netDevices},
      {"--alloc", std::string(toString(o.alloc))},
      {"--memory", std::string(toString(o.memory))},
      {"--device", std::to_string(o.device)},
      {"--op", std::string(toString(o.op))},
      {"--segment-bytes", std::to_string(o.segmentBytes)},
      {"--segments", std::to_string(o.segments)},
      {"--window", std::to_string(o.window)},
      {"--requests", std::to_string(o.requests)},
      {"--seconds", number(o.seconds)},
      {"--warmup", std::to_string(o.warmupRequests)},
      {"--pattern", std::string(toString(o.pattern))},
      {"--buffer-bytes", std::to_string(o.bufferBytes)},
      {"--target-spin-us", number(o.targetSpinUs)},
      {"--initiator-cpu", std::to_string(o.initiatorCpu)},
      {"--target-cpu", std::to_string(o.targetCpu)},
      {"--memcpy-seconds", number(o.memcpySeconds)},
      {"--timeout-s", number(o.timeoutSeconds)},
      {"--seed", std::to_string(o.seed)}};
  std::vector<std::string> args;
  for (const auto& [name, value] : values) {
    args.emplace_back(name);
    args.push_back(value);
  }
  if (o.notify) args.push_back("--notify");
  if (o.fixedOverhead) args.push_back("--fixed-overhead");
  if (!o.verify) args.push_back("--no-verify");
  if (o.memcpyReference) args.push_back("--memcpy");
  if (o.memcpyOnly) args.push_back("--memcpy-only");
  if (o.skipData) args.push_back("--skip-data");
  return args;
}

}  // namespace kvx::bench
