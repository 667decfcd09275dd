#include "bench/kv/control/registration_measure.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include "bench/kv/control/control_agents.h"
#include "bench/kv/control/control_clock.h"
#include "bench/kv/control/control_output.h"
#include "bench/kv/control/memory_room.h"
#include "kvx/agent.h"

namespace kvx::bench {
namespace {

constexpr const char* kRegistrationGroup = "registration";

double gibPerSecond(std::uint64_t bytes, double ms) {
  return ms > 0 ? static_cast<double>(bytes) / static_cast<double>(1u << 30) / (ms / 1000) : 0;
}

ControlFigure allocate(Agent& agent, const std::string& transport, std::uint64_t bytes,
                       bool populate) {
  const std::string name =
      fmt::format("allocateMemory {}, populate {}", bytesLabel(bytes), populate ? "on" : "off");
  if (Status room = checkMemoryRoom(bytes); !room.isOk()) {
    return unmeasuredFigure(kRegistrationGroup, name, transport, room.message());
  }
  AllocationSpec spec{.name = fmt::format("control.pool.{}", populate ? "populated" : "lazy"),
                      .length = bytes,
                      .populate = populate};
  const auto started = Clock::now();
  auto region = agent.allocateMemory(spec);
  const double ms = msSince(started);
  if (!region.isOk())
    return failedFigure(kRegistrationGroup, name, transport, region.status().toString());
  const auto deregistering = Clock::now();
  const Status gone = agent.deregisterMemory(region->id);
  const double deregisterMs = msSince(deregistering);
  if (!gone.isOk()) return failedFigure(kRegistrationGroup, name, transport, gone.toString());
  const std::string deregistered = fmt::format("deregisterMemory {:.1f} ms", deregisterMs);
  return measuredFigure(kRegistrationGroup, name, transport, ms, "ms", 1,
                        populate
                            ? fmt::format("{:.2f} GiB/s; {}", gibPerSecond(bytes, ms), deregistered)
                            : deregistered);
}

ControlFigure registerCallerMemory(Agent& agent, const std::string& transport,
                                   std::uint64_t bytes) {
  const std::string name =
      fmt::format("registerMemory {} (caller's, pages present)", bytesLabel(bytes));
  if (Status room = checkMemoryRoom(bytes); !room.isOk()) {
    return unmeasuredFigure(kRegistrationGroup, name, transport, room.message());
  }
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (memory == MAP_FAILED) {
    return unmeasuredFigure(kRegistrationGroup, name, transport,
                            fmt::format("mmap of {} failed", bytesLabel(bytes)));
  }
  const auto started = Clock::now();
  auto region = agent.registerMemory(
      MemoryRegionSpec{.name = "control.caller", .address = memory, .length = bytes});
  const double ms = msSince(started);
  ControlFigure figure;
  if (region.isOk()) {
    const auto deregistering = Clock::now();
    const Status gone = agent.deregisterMemory(*region);
    const double deregisterMs = msSince(deregistering);
    figure = gone.isOk() ? measuredFigure(kRegistrationGroup, name, transport, ms, "ms", 1,
                                          fmt::format("deregisterMemory {:.2f} ms", deregisterMs))
                         : failedFigure(kRegistrationGroup, name, transport, gone.toString());
  } else {
    figure = failedFigure(kRegistrationGroup, name, transport, region.status().toString());
  }
  ::munmap(memory, bytes);
  return figure;
}

}  // namespace

std::vector<ControlFigure> measureRegistration(const std::string& transport,
                                               const std::vector<std::uint64_t>& poolBytes) {
  std::vector<ControlFigure> out;
  const std::string startName = "Agent::create (UCX context, worker, listener)";
  const auto started = Clock::now();
  auto created = Agent::create(controlAgentOptions("control-registration", transport));
  if (!created.isOk()) {
    out.push_back(
        failedFigure(kRegistrationGroup, startName, transport, created.status().toString()));
    return out;
  }
  out.push_back(measuredFigure(kRegistrationGroup, startName, transport, msSince(started), "ms"));
  Agent& agent = **created;
  for (std::uint64_t bytes : poolBytes) {
    out.push_back(allocate(agent, transport, bytes, true));
    out.push_back(allocate(agent, transport, bytes, false));
    out.push_back(registerCallerMemory(agent, transport, bytes));
  }
  return out;
}

}  // namespace kvx::bench
