#pragma once

// ControlFigure: one figure of the `control` scenario of `kvx bench` (the control plane:
// registration, metadata size, handshake, descriptor cost, peer-death detection, abort),
// measured or, where it could not be measured, the reason why. ControlReport: every figure
// of one run plus notes on how they were taken. Plain data; the measures in this folder
// fill it, bench/kv/control/control_output.h prints it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvx::bench {

struct ControlFigure {
  std::string group;            // "registration", "metadata", "handshake", "descriptors", ...
  std::string name;             // what was measured: "allocate 1 GiB, populate on"
  std::string transport;        // "shm" or "tcp"; empty where the transport plays no part
  std::optional<double> value;  // absent: not measured, see `why`
  std::string unit;             // "ms", "ns/desc", "bytes", ...
  std::uint32_t samples = 0;    // how many measurements `value` summarises
  std::string detail;           // what else a reader needs: "max 3.1 ms", "ended CANCELLED"
  std::string target;           // the WORKLOADS.md target, e.g. "<= 100 ns/desc"; empty: none
  std::optional<bool> met;      // whether `value` meets `target`
  std::string why;              // why there is no value
  bool failed = false;          // true: kvx failed while measuring (not just impossible here)
};

struct ControlReport {
  std::vector<ControlFigure> figures;
  std::vector<std::string> notes;  // how the figures were taken, printed under the table

  bool failed() const {
    for (const ControlFigure& f : figures) {
      if (f.failed) return true;
    }
    return false;
  }
};

// A measured figure.
ControlFigure measuredFigure(std::string group, std::string name, std::string transport,
                             double value, std::string unit, std::uint32_t samples = 1,
                             std::string detail = "");
// A figure that this run could not measure (not a failure of kvx): `why` says what stood
// in the way.
ControlFigure unmeasuredFigure(std::string group, std::string name, std::string transport,
                               std::string why);
// A figure that could not be measured because kvx failed; `why` carries the error.
ControlFigure failedFigure(std::string group, std::string name, std::string transport,
                           std::string why);

}  // namespace kvx::bench
