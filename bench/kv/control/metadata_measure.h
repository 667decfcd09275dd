#pragma once

// The metadata figures of the `control` scenario on one transport: the size in bytes of
// the blob a KV agent exports (Agent::exportMetadata: one kMetadataBlob frame around the
// JSON of engine::PeerMetadata, as agent/metadata/metadata_codec.h encodes it; the same
// metadata its control-channel hello carries) for a pool with one region per layer: 32
// regions (llama3-8b, NHD) and 64 (qwen2.5-32b, NHD), and the cost per added region. The
// pools are small and not populated: the blob does not depend on their length.
//
// Called by runControlScenario only.

#include <string>
#include <vector>

#include "bench/kv/control/control_figure.h"

namespace kvx::bench {

std::vector<ControlFigure> measureMetadata(const std::string& transport);

}  // namespace kvx::bench
