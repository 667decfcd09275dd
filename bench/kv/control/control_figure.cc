#include "bench/kv/control/control_figure.h"

namespace kvx::bench {

ControlFigure measuredFigure(std::string group, std::string name, std::string transport,
                             double value, std::string unit, std::uint32_t samples,
                             std::string detail) {
  ControlFigure f;
  f.group = std::move(group);
  f.name = std::move(name);
  f.transport = std::move(transport);
  f.value = value;
  f.unit = std::move(unit);
  f.samples = samples;
  f.detail = std::move(detail);
  return f;
}

ControlFigure unmeasuredFigure(std::string group, std::string name, std::string transport,
                               std::string why) {
  ControlFigure f;
  f.group = std::move(group);
  f.name = std::move(name);
  f.transport = std::move(transport);
  f.why = std::move(why);
  return f;
}

ControlFigure failedFigure(std::string group, std::string name, std::string transport,
                           std::string why) {
  ControlFigure f =
      unmeasuredFigure(std::move(group), std::move(name), std::move(transport), std::move(why));
  f.failed = true;
  return f;
}

}  // namespace kvx::bench
