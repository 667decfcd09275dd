#include "daemon/request_record.h"

namespace kvx::daemon {
namespace {

double millis(std::chrono::nanoseconds d) { return static_cast<double>(d.count()) / 1e6; }

}  // namespace

nlohmann::json toJson(const RequestRecord& r) {
  const KvRequestStatus& s = r.status;
  return {
      {"index", r.index},
      {"id", r.id},
      {"destinationId", r.destinationId},
      {"decodeRank", r.decodeRank},
      {"heads", r.heads},
      {"tokens", r.tokens},
      {"sourceBlocks", r.sourceBlocks},
      {"prefixHashes", r.prefixHashes},
      {"mode", std::string(toString(r.mode))},
      {"layerwise", r.layerwise},
      {"arrivalMs", millis(r.arrival)},
      {"submittedAtMs", millis(r.submittedAt)},
      {"waitedForBlocksMs", millis(r.waitedForBlocks)},
      {"admission", r.admission},
      {"submitNs", r.submitNs},
      {"doneNs", r.doneNs},
      {"lastLayerNs", r.lastLayerNs},
      {"submitted", r.submitted},
      {"released", r.released},
      {"stopped", r.stopped},
      {"error", r.error},
      {"state", std::string(toString(s.state))},
      {"status", s.status.toString()},
      {"peer", s.peer.empty() ? r.destination : s.peer},
      {"placement", s.placement},
      {"blocks", s.blocks},
      {"prefixBlocks", s.prefixBlocks},
      {"bytes", s.bytes},
      {"descriptors", s.descriptors},
      {"operations", s.operations},
      {"queuedNs", s.queued.count()},
      {"latencyNs", s.latency.count()},
  };
}

}  // namespace kvx::daemon
