// The library UCX probe: asks the UCX this process is linked with (doctor/ucx_probe.h).
#include <ucp/api/ucp.h>
#include <ucs/memory/memory_type.h>
#include <uct/api/uct.h>

#include <memory>

#include "doctor/ucx_probe.h"
#include "engine/transport/ucx/ucx_status.h"

namespace kvx::doctor {
namespace {

using engine::ucx::fromUcs;

struct ContextCloser {
  void operator()(ucp_context_h context) const { ucp_cleanup(context); }
};
using ContextPtr = std::unique_ptr<ucp_context, ContextCloser>;

// The memory types a UCP context can move: UCS_MEMORY_TYPE_CUDA is set only when UCX was
// built with CUDA and its cuda transports loaded.
Status queryMemoryTypes(UcxFacts& facts) {
  ucp_config_t* config = nullptr;
  KVX_RETURN_IF_ERROR(fromUcs(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read"));
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AM;
  ucp_context_h raw = nullptr;
  const ucs_status_t status = ucp_init(&params, config, &raw);
  ucp_config_release(config);
  KVX_RETURN_IF_ERROR(fromUcs(status, "ucp_init (features RMA and AM)"));
  ContextPtr context(raw);

  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  KVX_RETURN_IF_ERROR(fromUcs(ucp_context_query(context.get(), &attr),
                              "ucp_context_query(UCP_ATTR_FIELD_MEMORY_TYPES)"));
  for (int type = 0; type < UCS_MEMORY_TYPE_LAST; ++type) {
    if ((attr.memory_types & (std::uint64_t{1} << type)) != 0) {
      facts.memoryTypes.emplace_back(ucs_memory_type_names[type]);
    }
  }
  return Status::ok();
}

// The transports of one memory domain, as "<transport>/<device>".
void listTransports(uct_component_h component, const char* mdName, UcxFacts& facts) {
  uct_md_config_t* config = nullptr;
  if (uct_md_config_read(component, nullptr, nullptr, &config) != UCS_OK) return;
  uct_md_h md = nullptr;
  const ucs_status_t status = uct_md_open(component, mdName, config, &md);
  uct_config_release(config);
  if (status != UCS_OK) return;  // a domain that does not open offers nothing to use
  uct_tl_resource_desc_t* resources = nullptr;
  unsigned count = 0;
  if (uct_md_query_tl_resources(md, &resources, &count) == UCS_OK) {
    for (unsigned i = 0; i < count; ++i) {
      facts.transports.push_back(std::string(resources[i].tl_name) + "/" + resources[i].dev_name);
    }
    uct_release_tl_resource_list(resources);
  }
  uct_md_close(md);
}

// Every uct component (loading UCX's transport modules) and the transports it offers here.
Status queryTransports(UcxFacts& facts) {
  uct_component_h* components = nullptr;
  unsigned count = 0;
  KVX_RETURN_IF_ERROR(fromUcs(uct_query_components(&components, &count), "uct_query_components"));
  for (unsigned i = 0; i < count; ++i) {
    uct_component_attr_t attr{};
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    if (uct_component_query(components[i], &attr) != UCS_OK) continue;
    facts.components.emplace_back(attr.name);
    std::vector<uct_md_resource_desc_t> mds(attr.md_resource_count);
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = mds.data();
    if (mds.empty() || uct_component_query(components[i], &attr) != UCS_OK) continue;
    for (const auto& md : mds) listTransports(components[i], md.md_name, facts);
  }
  uct_release_component_list(components);
  return Status::ok();
}

class UcxLibraryProbe final : public UcxProbe {
 public:
  Result<UcxFacts> probe() const override {
    UcxFacts facts;
    facts.source = "the loaded UCX library";
    facts.version = ucp_get_version_string();
    KVX_RETURN_IF_ERROR(queryMemoryTypes(facts));
    KVX_RETURN_IF_ERROR(queryTransports(facts));
    return facts;
  }
};

}  // namespace

std::unique_ptr<UcxProbe> makeUcxLibraryProbe() { return std::make_unique<UcxLibraryProbe>(); }

}  // namespace kvx::doctor
