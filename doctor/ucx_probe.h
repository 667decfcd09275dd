#pragma once

// What the UCX library kvx runs on can do, behind an interface so tests can inject it:
// the library probe asks the loaded UCX (ucp_get_version_string, ucp_context_query with
// UCP_ATTR_FIELD_MEMORY_TYPES, and the uct component and transport lists); the fixture probe
// reads the same facts from a JSON file in a fixture root (kvx-doctor-ucx.json):
//   {"version": "1.16.0", "memoryTypes": ["host", "cuda", "cuda-managed"],
//    "components": ["self", "tcp", "ib", "cuda_cpy", "cuda_ipc", "gdr_copy"],
//    "transports": ["rc_mlx5/mlx5_0:1", "cuda_copy/cuda", "gdr_copy/cuda"]}
// Probes are stateless; any thread may call them.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "doctor/system_root.h"
#include "kvx/result.h"

namespace kvx::doctor {

inline constexpr const char* kUcxFixtureFile = "kvx-doctor-ucx.json";

struct UcxFacts {
  std::string version;                   // "1.13.1"
  std::vector<std::string> memoryTypes;  // UCX's names: "host", "cuda", "cuda-managed", ...
  std::vector<std::string> components;   // uct components: "self", "tcp", "ib", "gdr_copy", ...
  std::vector<std::string> transports;   // "<transport>/<device>": "tcp/lo", "rc_mlx5/mlx5_0:1"
  std::string source;                    // "the loaded UCX library" or the fixture file

  // The UCS_MEMORY_TYPE_CUDA bit of the context's memory types: UCX was built with CUDA.
  bool supportsCuda() const;
  // Built with CUDA and a release whose one-sided put/get takes GPU memory (1.16 and later:
  // engine/transport/ucx/ucx_gpu_transports.h). What kvx needs for the direct path.
  bool putGetMovesCuda() const;
  // UCX's gdr_copy component is there: built --with-gdrcopy and libgdrapi loads.
  bool hasGdrCopy() const;
};

class UcxProbe {
 public:
  virtual ~UcxProbe() = default;
  virtual Result<UcxFacts> probe() const = 0;
};

// The UCX library this process is linked with.
std::unique_ptr<UcxProbe> makeUcxLibraryProbe();

// Facts read from `jsonFile` (the format above); INVALID_ARGUMENT names a malformed field.
std::unique_ptr<UcxProbe> makeUcxFixtureProbe(std::filesystem::path jsonFile);

// The fixture probe when <root>/kvx-doctor-ucx.json exists, else the library probe.
std::unique_ptr<UcxProbe> makeUcxProbeFor(const SystemRoot& root);

}  // namespace kvx::doctor
