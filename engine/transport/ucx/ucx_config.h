#pragma once

// The UCX configuration a kvx transport runs with: TransportOptions and kvx's measured
// defaults, applied to a ucp_config_t (ucp_config_modify) so that the process environment
// is never changed. Every setting has a UCX_* environment variable; where the user has set
// that variable, the user's value wins and kvx leaves the setting alone.
//
// Defaults (see /work/shared/UCX-NOTES.md for the measurements behind them):
//   UCX_TLS               from options.transports: "shm" = "sm,self", "tcp" = "tcp", other
//                         names pass through; comma lists are joined. With a UCX built with
//                         CUDA, "shm" adds its GPU transports (cuda_copy, cuda_ipc, gdr_copy:
//                         ucx_gpu_transports.h) and "tcp" adds cuda_copy and gdr_copy. Empty: UCX's
//                         own default (all transports). A transport connecting to its own address
//                         works without "self", and with UCP_ERR_HANDLING_MODE_PEER UCX never
//                         selects "self" anyway (measured: the lane is tcp/lo or sysv/posix).
//   UCX_NET_DEVICES       from options.netDevices when not empty (pin "lo" or a NIC, else
//                         UCX advertises every interface's address).
//   UCX_TCP_TX_SEG_SIZE   256K   } 3.7 GB/s instead of ~0.7 GB/s on tcp; only when tcp is
//   UCX_TCP_RX_SEG_SIZE   512K   } in use, and both left alone if the user set either.
//   UCX_MM_ERROR_HANDLING y      shared-memory endpoints need it for UCP_ERR_HANDLING_MODE_PEER.

#include <ucp/api/ucp.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/transport/transport.h"
#include "kvx/result.h"

namespace kvx::engine::ucx {

// One default. UCX releases name some settings differently in ucp_config_modify (1.13 takes a
// tcp setting without its "TCP_" prefix, 1.22 only with it), so a setting carries every name
// it is known by, tried in order; the first the loaded UCX accepts is the one applied.
struct UcxSetting {
  std::string envName;            // "UCX_TCP_TX_SEG_SIZE": the variable that overrides it
  std::vector<std::string> keys;  // {"TX_SEG_SIZE", "TCP_TX_SEG_SIZE"}: names to try, in order
  std::string value;
};

// Returns the value of an environment variable, or nullptr when it is not set.
using EnvLookup = std::function<const char*(const char* name)>;

// The settings kvx applies on top of the environment for `options`, in order; a pure
// function of its inputs. `gpuTransports`: the library's GPU transports (ucxGpuTransports()).
// INVALID_ARGUMENT for a malformed transport list.
Result<std::vector<UcxSetting>> computeUcxSettings(
    const TransportOptions& options, const EnvLookup& getEnv,
    const std::vector<std::string>& gpuTransports = {});

// The same, looked up in the real environment and the loaded library.
Result<std::vector<UcxSetting>> computeUcxSettings(const TransportOptions& options);

// What to add to UCX's "Destination is unreachable" when this agent's data path runs on the
// devices `netDevices` (options.netDevices; UCX_NET_DEVICES, when set, is what UCX used):
// which devices those are, and that peers on other hosts need an interface that reaches them.
std::string unreachableHint(const std::string& netDevices);

// "UCX_TLS=tcp UCX_TCP_TX_SEG_SIZE=256K ...", for the log line at startup.
std::string describeSettings(const std::vector<UcxSetting>& settings);

struct UcxConfigDeleter {
  void operator()(ucp_config_t* config) const { ucp_config_release(config); }
};
using UcxConfigPtr = std::unique_ptr<ucp_config_t, UcxConfigDeleter>;

// Reads UCX's configuration from the environment and applies `settings` to it. A setting
// that the loaded UCX accepts under none of its names is skipped with one info line naming it
// and the UCX version (an agent never fails to start over a default); a failure of another
// kind (a value UCX refuses) is an error.
Result<UcxConfigPtr> makeUcxConfig(const std::vector<UcxSetting>& settings);

}  // namespace kvx::engine::ucx
