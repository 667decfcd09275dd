#include "bench/bare/bare_ucp_initiator.h"

#include <cinttypes>
#include <cstdio>

#include "bench/bare/bare_ucp_cli.h"
#include "bench/bare/bare_ucp_node.h"
#include "bench/bare/data_pattern.h"
#include "bench/bare/memcpy_reference.h"
#include "bench/bare/process_cpu.h"
#include "bench/bare/request_loop.h"
#include "bench/bare/target_link.h"
#include "bench/bare/target_protocol.h"
#include "process/child_process.h"

namespace kvx::bench {
namespace {

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%016" PRIx64, value);
  return text;
}

struct Measured {
  LoopFigures loop;
  std::uint64_t cpuNs = 0;
};

Result<Measured> measure(RequestLoop& loop, TargetLink& target, const BareUcpOptions& o,
                         Deadline deadline) {
  KVX_RETURN_IF_ERROR(loop.run(LoopRun{0, o.warmupRequests, 0}, deadline).status());
  KVX_RETURN_IF_ERROR(target.send(TargetMessage::kStart, deadline));
  KVX_RETURN_IF_ERROR(target.expect(TargetMessage::kStarted, deadline).status());
  Measured m;
  const std::uint64_t cpu0 = processCpuNs();
  KVX_ASSIGN_OR_RETURN(m.loop,
                       loop.run(LoopRun{o.warmupRequests, o.requests, o.seconds}, deadline));
  m.cpuNs = processCpuNs() - cpu0;
  return m;
}

// Whether every request id in [0, requestsRun) was notified exactly once; describes the count
// and the first missing ids.
bool notificationsComplete(const TargetReport& report, std::uint64_t requestsRun,
                           std::string& detail) {
  std::vector<std::uint8_t> seen(requestsRun, 0);
  std::uint64_t unique = 0, strays = 0;
  for (const Notification& n : report.notifications) {
    if (n.requestId >= requestsRun || seen[n.requestId] != 0) {
      ++strays;
      continue;
    }
    seen[n.requestId] = 1;
    ++unique;
  }
  std::string missing;
  for (std::uint64_t id = 0, shown = 0; id < requestsRun && shown < 5; ++id) {
    if (seen[id] == 0) missing += (shown++ == 0 ? " (missing ids " : ", ") + std::to_string(id);
  }
  if (!missing.empty()) missing += unique + 5 < requestsRun ? ", ...)" : ")";
  detail += (detail.empty() ? "" : "; ") + std::to_string(unique) + " of " +
            std::to_string(requestsRun) + " notifications received" + missing +
            (strays > 0 ? ", " + std::to_string(strays) + " duplicate or unknown" : "");
  return unique == requestsRun && strays == 0;
}

VerifyFigures verify(const BareUcpOptions& o, const BareUcpNode& node,
                     const std::vector<std::uint8_t>& touched, const TargetReport& report,
                     std::uint64_t requestsRun) {
  VerifyFigures v{true, true, ""};
  const std::uint64_t bytes = node.bufferBytes(), s = o.segmentBytes;
  std::uint64_t written = 0;
  for (const std::uint8_t t : touched) written += t;
  const std::vector<std::uint8_t> none;
  const bool put = o.op == BareOp::kPut;
  const std::uint64_t targetWant =
      put ? expectedChecksum(bytes, s, touched, kTargetSeed, kInitiatorSeed)
          : expectedChecksum(bytes, s, none, kTargetSeed, 0);
  const Result<std::uint64_t> localRead = node.checksumBuffer();
  if (!localRead.isOk()) return VerifyFigures{true, false, localRead.status().toString()};
  const std::uint64_t localHave = *localRead;
  const std::uint64_t localWant =
      put ? expectedChecksum(bytes, s, none, kInitiatorSeed, 0)
          : expectedChecksum(bytes, s, touched, kInitiatorSeed, kTargetSeed);
  auto check = [&](bool ok, const std::string& what) {
    v.ok = v.ok && ok;
    if (!what.empty()) v.detail += (v.detail.empty() ? "" : "; ") + what;
    v.detail += ok ? " ok" : " MISMATCH";
  };
  check(report.checksum == targetWant,
        "target buffer checksum " + hex(report.checksum) + " vs expected " + hex(targetWant) +
            " (" + (put ? std::to_string(written) + " slots written" : "unchanged") + ")");
  check(localHave == localWant,
        "initiator buffer checksum " + hex(localHave) + " vs expected " + hex(localWant) + " (" +
            (put ? "unchanged" : std::to_string(written) + " slots read") + ")");
  if (o.notifies()) check(notificationsComplete(report, requestsRun, v.detail), "");
  return v;
}

void computeFigures(const BareUcpOptions& o, const Measured& m, const TargetReport& report,
                    BareUcpResult& r) {
  const LoopFigures& f = m.loop;
  r.requests = f.requests;
  r.seconds = static_cast<double>(f.lastRetireNs - f.firstPostNs) / 1e9;
  r.payloadBytes = f.requests * o.segments * o.segmentBytes;
  if (r.seconds > 0) {
    r.gbps = static_cast<double>(r.payloadBytes) / r.seconds / 1e9;
    r.opsPerSecond = static_cast<double>(f.requests * o.segments) / r.seconds;
    r.requestsPerSecond = static_cast<double>(f.requests) / r.seconds;
  }
  r.initiatorLatency = latencyFigures(f.initiator.summary());
  if (o.notifies()) {
    workload::LatencyRecorder receiver;
    const std::uint64_t first = o.warmupRequests;
    for (const Notification& n : report.notifications) {
      if (n.requestId < first || n.requestId - first >= f.postNs.size()) continue;
      receiver.add(std::chrono::nanoseconds(n.receivedNs - f.postNs[n.requestId - first]));
    }
    r.receiverLatency = latencyFigures(receiver.summary());
  }
  if (f.requests > 0) {
    r.initiatorCpuUsPerRequest =
        static_cast<double>(m.cpuNs) / 1e3 / static_cast<double>(f.requests);
    r.targetCpuUsPerRequest =
        static_cast<double>(report.cpuNs) / 1e3 / static_cast<double>(f.requests);
  }
}

}  // namespace

Result<BareUcpResult> runBareUcpInitiator(const BareUcpOptions& o,
                                          const std::string& targetBinary) {
  KVX_RETURN_IF_ERROR(validate(o));
  BareUcpResult result;
  describeOptions(o, result);
  result.ucxVersion = ucp_get_version_string();
  if (o.memcpyOnly) {
    result.verify = VerifyFigures{false, true, "memcpy only: no UCX data moved"};
    KVX_ASSIGN_OR_RETURN(result.memcpy,
                         measureMemcpy(o.segmentBytes, o.effectiveBufferBytes(), o.memcpySeconds));
    return result;
  }
  const Deadline deadline = deadlineIn(o.timeoutSeconds);
  std::vector<std::string> args = toArguments(o);
  args.insert(args.end(), {"--role", "target", "--quiet"});
  KVX_ASSIGN_OR_RETURN(
      process::ChildProcess child,
      process::ChildProcess::spawn(
          targetBinary, args, {.stdinPipe = true, .captureStderr = false, .killWithParent = true}));
  TargetLink target(std::move(child));
  KVX_RETURN_IF_ERROR(pinToCpu(o.initiatorCpu));

  KVX_ASSIGN_OR_RETURN(std::unique_ptr<BareUcpNode> node, BareUcpNode::create(o));
  const std::uint64_t bytes = o.effectiveBufferBytes();
  KVX_RETURN_IF_ERROR(node->mapBuffer(bytes));
  KVX_RETURN_IF_ERROR(node->fillBuffer(kInitiatorSeed));
  result.settings = node->settings();

  KVX_ASSIGN_OR_RETURN(std::vector<std::uint8_t> helloBytes,
                       target.expect(TargetMessage::kHello, deadline));
  KVX_ASSIGN_OR_RETURN(TargetHello hello, decodeHello(helloBytes));
  if (hello.bufferBytes != bytes) {
    return protocolError("target buffer is " + std::to_string(hello.bufferBytes) +
                         " bytes, expected " + std::to_string(bytes));
  }
  KVX_RETURN_IF_ERROR(node->connect(hello.workerAddress, hello.packedKey));
  KVX_RETURN_IF_ERROR(node->populateRemote(hello.bufferAddress, bytes));
  const std::vector<std::uint8_t> ownAddress = node->workerAddress();
  KVX_RETURN_IF_ERROR(target.send(TargetMessage::kConnect, deadline, ownAddress));
  KVX_RETURN_IF_ERROR(target.expect(TargetMessage::kConnected, deadline).status());
  result.lanes = node->lanes();

  std::vector<std::uint8_t> touched(o.slotCount(), 0);
  Measured measured;
  {
    RequestLoop loop(*node, o, hello.bufferAddress, touched, [&] { return target.checkAlive(); });
    Result<Measured> run = measure(loop, target, o, deadline);
    if (!run.isOk()) {
      // Fails the requests still in flight (the loop detaches any that UCX keeps).
      node->closeEndpoint(std::chrono::steady_clock::now() + std::chrono::seconds(2), true)
          .ignore();
      return run.status().withContext("bare UCP loop with the target process over " + result.lanes);
    }
    measured = std::move(run).value();
  }
  const std::uint64_t requestsRun = o.warmupRequests + measured.loop.requests;
  KVX_RETURN_IF_ERROR(
      target.send(TargetMessage::kStop, deadline, encodeStop(o.notifies() ? requestsRun : 0)));
  KVX_ASSIGN_OR_RETURN(std::vector<std::uint8_t> reportBytes,
                       target.expect(TargetMessage::kReport, deadline));
  KVX_ASSIGN_OR_RETURN(TargetReport report, decodeReport(reportBytes));
  // Graceful: the target keeps progressing until kBye.
  KVX_RETURN_IF_ERROR(node->closeEndpoint(deadline, false));
  KVX_RETURN_IF_ERROR(target.send(TargetMessage::kBye, deadline));
  KVX_RETURN_IF_ERROR(target.finish(deadline));

  computeFigures(o, measured, report, result);
  result.verify = o.verify ? verify(o, *node, touched, report, requestsRun)
                           : VerifyFigures{false, true, "not checked (--no-verify)"};
  node.reset();
  if (o.memcpyReference) {
    KVX_ASSIGN_OR_RETURN(result.memcpy, measureMemcpy(o.segmentBytes, bytes, o.memcpySeconds));
  }
  return result;
}

}  // namespace kvx::bench
