#include "bench/kv/control/control_step.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "agent/logging.h"
#include "bench/kv/control/abort_measure.h"
#include "bench/kv/control/descriptor_measure.h"
#include "bench/kv/control/fixed_overhead_measure.h"
#include "bench/kv/control/handshake_measure.h"
#include "bench/kv/control/metadata_measure.h"
#include "bench/kv/control/peer_death_measure.h"
#include "bench/kv/control/registration_measure.h"

namespace kvx::bench {

std::vector<std::string> controlStepNames() {
  return {"registration",
          "metadata",
          "handshake",
          "descriptors",
          "fixed-overhead",
          "abort-agent-allocated",
          "abort-agent-registered",
          "abort-kv",
          "peer-death"};
}

std::string controlStepGroup(const std::string& step) {
  if (step.rfind("abort", 0) == 0) return "abort";
  if (step == "peer-death") return "peer death";
  if (step == "fixed-overhead") return "fixed overhead";
  return step;
}

Result<std::vector<ControlFigure>> runControlStep(const std::string& step, const std::string& t,
                                                  const ControlOptions& options) {
  kvx::agent::configureLogging();
  spdlog::set_level(
      spdlog::level::from_str(options.logLevel == "warn" ? "error" : options.logLevel));
  const ControlSizes sizes = controlSizes(options.quick);
  if (step == "registration") return measureRegistration(t, sizes.poolBytes);
  if (step == "metadata") return measureMetadata(t);
  if (step == "handshake") {
    return measureHandshake(t, sizes.handshakePairs, sizes.handshakePoolBlocks);
  }
  if (step == "descriptors") {
    return measureDescriptors(t, sizes.descriptors, sizes.descriptorBytes, sizes.descriptorRepeats);
  }
  if (step == "fixed-overhead") {
    FixedOverheadOptions fixed;
    fixed.segmentBytes = sizes.fixedOverheadBytes;
    fixed.repeats = sizes.fixedOverheadRepeats;
    fixed.warmup = std::max<std::uint32_t>(5, sizes.fixedOverheadRepeats / 10);
    fixed.bareBinary = options.bareBinary;
    return measureFixedOverhead(t, fixed);
  }
  if (step == "abort-agent-allocated") {
    return measureAgentAbort(t, sizes.abortBytes, AbortTarget::kAllocated);
  }
  if (step == "abort-agent-registered") {
    return measureAgentAbort(t, sizes.abortBytes, AbortTarget::kRegistered);
  }
  if (step == "abort-kv") return measureKvAbort(t, sizes.abortBytes);
  if (step == "peer-death") {
    PeerDeathOptions death;
    death.kvxBinary = options.kvxBinary;
    death.logLevel = options.logLevel;
    death.tokens = sizes.deathRequestTokens;
    death.window = sizes.deathWindow;
    death.warmUp = std::chrono::milliseconds(options.quick ? 300 : 1000);
    return measurePeerDeath(t, death);
  }
  std::string names;
  for (const std::string& n : controlStepNames()) names += (names.empty() ? "" : ", ") + n;
  return notFound("unknown control step '" + step + "' (steps: " + names + ")");
}

}  // namespace kvx::bench
