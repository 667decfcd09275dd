#pragma once

// What the `control` scenario of `kvx bench` writes: its section of the human table (one
// row per figure, grouped by concern, with the notes on how they were taken), its part of
// the --json document (which is also how a step's process hands its figures back), and its
// --csv rows (one per figure). Pure formatting; any thread.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/kv/control/control_figure.h"
#include "kvx/result.h"

namespace kvx::bench {

// "64 MiB", "1 GiB", "4 KiB", "64 B" (whole units only where exact; "1.5 GiB" otherwise).
std::string bytesLabel(std::uint64_t bytes);

// A figure's value as the table shows it: bytes as integers, otherwise 3 significant
// digits or more ("0.0123", "1.23", "12.3", "123", "12345").
std::string formatValue(double value, const std::string& unit);

std::string renderControlTable(const ControlReport& report);
// {"scenario": "control", "figures": [{group, name, transport, value|null, unit, samples,
//  detail, target, met|null, why, failed}], "notes": [...]}
nlohmann::json controlToJson(const ControlReport& report);
// The inverse of controlToJson (how a step's process hands its figures back);
// PROTOCOL_ERROR naming the field that is missing or of the wrong type.
Result<ControlReport> controlFromJson(const nlohmann::json& json);
// Header "scenario,group,figure,transport,value,unit,samples,target,met,detail,why,failed"
// and one row per figure; fields with commas or quotes are quoted.
std::string controlToCsv(const ControlReport& report);

}  // namespace kvx::bench
