// PrefillDriver: one prompt's requests, from their source blocks to their end: the specs
// (whole or sliced, source blocks in --block-order), the simulated compute that fills them,
// submit, the layers of layer-wise requests, and the wait for the outcome.
#include <spdlog/spdlog.h>

#include <thread>

#include "daemon/kv_content.h"
#include "daemon/prefill_driver.h"
#include "daemon/report_clocks.h"

namespace kvx::daemon {
namespace {

void freeBlocks(KvAgent& agent, const KvRequestSpec& spec) {
  Status freed = agent.freeBlocks(spec.sourceBlocks);
  if (!freed.isOk()) spdlog::warn("freeing the blocks of {}: {}", spec.id, freed.toString());
}

}  // namespace

std::vector<PrefillDriver::Part> PrefillDriver::makeParts(std::span<RequestRecord> records,
                                                          const workload::TraceRecord& trace,
                                                          std::vector<std::uint64_t> blocks) const {
  const std::vector<SlicePart> slices = options_.tp.sliced()
                                            ? slicePlan(options_.tp, records[0].destinationId)
                                            : std::vector<SlicePart>{};
  const std::size_t perPart = blocks.size() / records.size();
  std::vector<Part> parts;
  for (std::size_t p = 0; p < records.size(); ++p) {
    Part part{&records[p], {}};
    KvRequestSpec& spec = part.spec;
    spec.id = records[p].id;
    spec.tokens = trace.inputLength;
    spec.sourceBlocks.assign(blocks.begin() + static_cast<std::ptrdiff_t>(p * perPart),
                             blocks.begin() + static_cast<std::ptrdiff_t>((p + 1) * perPart));
    applyBlockOrder(options_.blockOrder, mix(options_.seed, fnv1a(spec.id)), spec.sourceBlocks);
    spec.prefixHashes = trace.hashIds;
    spec.mode = records[p].mode;
    spec.layerwise = records[p].layerwise;
    // The driver writes each layer after submit: a failed request's blocks must not go to
    // another request while it may be writing one.
    spec.keepSourceForProducer = spec.layerwise;
    if (!slices.empty()) {
      spec.destination = records[p].destination;
      spec.slice = slices[p].slice;
    }
    parts.push_back(std::move(part));
  }
  return parts;
}

void PrefillDriver::produce(std::vector<Part>& parts, const workload::TraceRecord& trace) {
  const HeadSpan own = options_.tp.heads();
  const KvContent content(parts[0].record->destinationId, trace.inputLength, trace.hashIds,
                          geometryOf(agent_.pool(), options_.prefixChunkTokens, own.first,
                                     own.count, options_.tp.totalHeads));
  const SegmentStore segments = segmentsOf(agent_);
  const std::uint32_t layers = agent_.pool().layers;
  const auto layerTime = fromMs(options_.layerMs);
  // Only the heads a part moves need their content.
  auto fill = [&](const Part& part, std::uint32_t layer) {
    if (!options_.fill) return Status::ok();
    const ContentCpuScope accounted;
    const HeadSpan heads = part.spec.slice
                               ? HeadSpan{part.spec.slice->sourceFirstHead, part.spec.slice->heads}
                               : HeadSpan{0, own.count};
    return content.fillLayer(segments, part.spec.sourceBlocks, layer, heads.first, heads.count);
  };

  const bool layerwise = parts[0].record->layerwise;
  Status failure;
  if (!layerwise) {
    // The whole prompt is computed first, one layer per step, then moved.
    for (std::uint32_t layer = 0; layer < layers && failure.isOk(); ++layer) {
      for (const Part& part : parts) {
        if (failure.isOk()) failure = fill(part, layer);
      }
      std::this_thread::sleep_for(layerTime);
    }
  }
  for (Part& part : parts) {
    if (failure.isOk()) {
      submit(part);
    } else {
      part.record->error = failure.withContext("filling the source blocks").toString();
      freeBlocks(agent_, part.spec);
    }
  }
  if (!layerwise) return;

  std::vector<bool> feeding(parts.size());
  for (std::size_t p = 0; p < parts.size(); ++p) feeding[p] = parts[p].record->submitted;
  for (std::uint32_t layer = 0; layer < layers; ++layer) {
    std::vector<Status> filled(parts.size());
    for (std::size_t p = 0; p < parts.size(); ++p) {
      if (feeding[p]) filled[p] = fill(parts[p], layer);
    }
    std::this_thread::sleep_for(layerTime);
    for (std::size_t p = 0; p < parts.size(); ++p) {
      if (!feeding[p]) continue;
      Status s = filled[p];
      // The exposed tail starts when the last layer is handed over: the call may move it
      // before it returns.
      if (s.isOk() && layer + 1 == layers) parts[p].record->lastLayerNs = monotonicNowNs();
      if (s.isOk()) s = agent_.layerReady(parts[p].spec.id, layer);
      if (s.isOk()) continue;
      // The request has failed (its status will say why) or cannot go on: stop feeding it.
      parts[p].record->error = s.withContext("layer " + std::to_string(layer)).toString();
      Status c = agent_.cancel(parts[p].spec.id);
      c.ignore();
      feeding[p] = false;
    }
  }
}

void PrefillDriver::submit(Part& part) {
  RequestRecord& record = *part.record;
  record.submittedAt = Clock::now() - start_;
  record.submitNs = monotonicNowNs();
  Status s = agent_.submit(part.spec);
  if (!s.isOk()) {
    record.error = s.withContext("submit").toString();
    freeBlocks(agent_, part.spec);
    return;
  }
  record.submitted = true;
  {
    sync::MutexLock lock(mutex_);
    ++submitted_;
    ++inFlight_;
  }
  spdlog::debug("{} submitted: {} tokens, {} blocks, {}{}{}", record.id, record.tokens,
                part.spec.sourceBlocks.size(), toString(record.mode),
                record.layerwise ? ", layer-wise" : "",
                part.spec.slice ? ", heads to " + record.destination : "");
}

void PrefillDriver::finish(RequestRecord& record) {
  const auto deadline = Clock::now() + options_.requestTimeout + std::chrono::seconds(5);
  auto done = agent_.wait(record.id, deadline);
  record.doneNs = monotonicNowNs();
  // The request's own failure says more than the layerReady call that noticed it.
  std::string failure;
  if (done.isOk()) {
    record.status = *done;
    record.released = done->state == KvRequestState::kReleased && done->status.isOk();
    if (!record.released) failure = done->status.toString();
  } else {
    if (done.status().code() == StatusCode::kTimedOut) {
      Status c = agent_.cancel(record.id);
      c.ignore();
    }
    if (auto known = agent_.status(record.id); known.isOk()) record.status = *known;
    failure = done.status().toString();
  }
  if (record.released) {
    record.error.clear();
  } else if (record.error.empty()) {
    record.error = failure;
  } else if (!failure.empty()) {
    record.error = failure + " (noticed at " + record.error + ")";
  }
  const KvRequestStatus& s = record.status;
  spdlog::debug(
      "{} {}: {} -> {} ({}), {:.3f} ms (queued {:.3f}), {} bytes, {} descriptors / {} "
      "ops, {} prefix blocks{}{}",
      record.id, record.released ? "released" : "FAILED", record.tokens, s.peer, s.placement,
      static_cast<double>(s.latency.count()) / 1e6, static_cast<double>(s.queued.count()) / 1e6,
      s.bytes, s.descriptors, s.operations, s.prefixBlocks, record.error.empty() ? "" : ": ",
      record.error);
}

}  // namespace kvx::daemon
