#include "engine/transport/ucx/ucx_context.h"

#include <spdlog/spdlog.h>

#include "engine/transport/ucx/ucx_config.h"
#include "engine/transport/ucx/ucx_gpu_transports.h"
#include "engine/transport/ucx/ucx_request.h"
#include "engine/transport/ucx/ucx_status.h"

namespace kvx::engine::ucx {

Result<std::string> whyContextCannotMoveCuda(ucp_context_h context,
                                             const std::vector<UcxSetting>& settings) {
  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  const ucs_status_t status = ucp_context_query(context, &attr);
  if (status != UCS_OK) return fromUcs(status, "ucp_context_query");
  const bool cudaBuilt = (attr.memory_types & (std::uint64_t{1} << UCS_MEMORY_TYPE_CUDA)) != 0;
  // Without CUDA among the context's memory types: UCX has no CUDA at all, or has it but is a
  // release whose put/get cannot use it (kvx then leaves its GPU transports out of UCX_TLS),
  // or the user's UCX_TLS leaves them out.
  const bool libraryHasCuda = !ucxLibraryGpuTransports().empty();
  std::string whyNotCuda = ucxWhyNotCuda(ucp_get_version_string(), libraryHasCuda);
  if (!libraryHasCuda) {
    whyNotCuda += " (ucp_context_query lists no CUDA memory type)";
  } else if (whyNotCuda.empty() && !cudaBuilt) {
    whyNotCuda = "the selected UCX transports (" + describeSettings(settings) +
                 ") include none that moves CUDA memory";
  }
  return whyNotCuda;
}

Result<std::shared_ptr<UcxContext>> UcxContext::create(const TransportOptions& options) {
  KVX_ASSIGN_OR_RETURN(std::vector<UcxSetting> settings, computeUcxSettings(options));
  KVX_ASSIGN_OR_RETURN(UcxConfigPtr config, makeUcxConfig(settings));

  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_REQUEST_SIZE |
                      UCP_PARAM_FIELD_REQUEST_INIT | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.request_size = sizeof(UcxRequest);
  params.request_init = &initUcxRequest;
  params.mt_workers_shared = 0;

  ucp_context_h context = nullptr;
  ucs_status_t status = ucp_init(&params, config.get(), &context);
  if (status != UCS_OK) {
    return fromUcs(status, "ucp_init with " + describeSettings(settings));
  }

  Result<std::string> whyNot = whyContextCannotMoveCuda(context, settings);
  if (!whyNot.isOk()) {
    ucp_cleanup(context);
    return whyNot.status();
  }
  const std::string& whyNotCuda = *whyNot;
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  const std::string version =
      std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
  spdlog::info("{}: UCX {} context ({}), CUDA memory {}",
               options.agentName.empty() ? "kvx" : options.agentName, version,
               describeSettings(settings),
               whyNotCuda.empty() ? std::string("supported") : "not supported: " + whyNotCuda);
  if (major == 1 && minor == 13 && options.transports.find("tcp") != std::string::npos) {
    spdlog::warn(
        "{}: UCX {} over tcp can crash or abort this process inside UCX after a peer failure "
        "during a network fault (docs/reliability.md); kvx's socket transport (--transport "
        "socket) moves the same data over TCP without UCX and has no such failure",
        options.agentName.empty() ? "kvx" : options.agentName, version);
  }
  return std::shared_ptr<UcxContext>(new UcxContext(context, whyNotCuda));
}

UcxContext::~UcxContext() { ucp_cleanup(context_); }

}  // namespace kvx::engine::ucx
