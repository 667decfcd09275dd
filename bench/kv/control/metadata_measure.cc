#include "bench/kv/control/metadata_measure.h"

#include <fmt/format.h>

#include <optional>

#include "agent/metadata/metadata_codec.h"
#include "bench/kv/control/control_agents.h"
#include "kvx/kv_agent.h"

namespace kvx::bench {
namespace {

constexpr const char* kMetadataGroup = "metadata";

struct BlobSize {
  std::size_t bytes = 0;
  std::size_t regions = 0;
};

// The blob of a decode KV agent with a 16-block pool of `model`; its size, and the region
// count read back from it.
Result<BlobSize> blobOf(const std::string& transport, const std::string& model) {
  KVX_ASSIGN_OR_RETURN(
      auto agent, KvAgent::create(controlKvOptions("control-metadata", KvRole::kDecode, transport,
                                                   model, 16, false)));
  KVX_ASSIGN_OR_RETURN(std::vector<std::uint8_t> blob, agent->agent().exportMetadata());
  KVX_ASSIGN_OR_RETURN(engine::PeerMetadata decoded, agent::metadata::decodeMetadataBlob(blob));
  return BlobSize{blob.size(), decoded.regions.size()};
}

}  // namespace

std::vector<ControlFigure> measureMetadata(const std::string& transport) {
  std::vector<ControlFigure> out;
  std::optional<BlobSize> sizes[2];
  const std::pair<const char*, const char*> pools[] = {{"llama3-8b", "32"}, {"qwen2.5-32b", "64"}};
  for (std::size_t i = 0; i < 2; ++i) {
    const std::string name =
        fmt::format("metadata blob, {} regions ({} pool, NHD)", pools[i].second, pools[i].first);
    auto blob = blobOf(transport, pools[i].first);
    if (!blob.isOk()) {
      out.push_back(failedFigure(kMetadataGroup, name, transport, blob.status().toString()));
      continue;
    }
    sizes[i] = *blob;
    out.push_back(measuredFigure(kMetadataGroup, name, transport, static_cast<double>(blob->bytes),
                                 "bytes", 1, fmt::format("{} regions in the blob", blob->regions)));
  }
  if (sizes[0] && sizes[1] && sizes[1]->regions > sizes[0]->regions) {
    const double perRegion = static_cast<double>(sizes[1]->bytes - sizes[0]->bytes) /
                             static_cast<double>(sizes[1]->regions - sizes[0]->regions);
    out.push_back(measuredFigure(kMetadataGroup, "metadata bytes per added region", transport,
                                 perRegion, "bytes", 1, "JSON with a hex packed key per region"));
  }
  return out;
}

}  // namespace kvx::bench
