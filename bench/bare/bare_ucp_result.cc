#include "bench/bare/bare_ucp_result.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace kvx::bench {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kSchemaVersion = 1;

double us(std::chrono::nanoseconds d) { return static_cast<double>(d.count()) / 1e3; }

Json latencyJson(const LatencyFigures& f) {
  return Json{{"count", f.count}, {"min", f.min}, {"mean", f.mean}, {"p50", f.p50},
              {"p90", f.p90},     {"p99", f.p99}, {"max", f.max}};
}

// Reads typed fields out of a parsed object; remembers the first missing or mistyped key so
// that the caller checks once at the end.
class JsonFieldReader {
 public:
  const Json* field(const Json& object, const char* key) {
    if (!object.is_object() || !object.contains(key)) {
      fail(std::string("'") + key + "' is missing");
      return nullptr;
    }
    return &object[key];
  }
  std::string text(const Json& object, const char* key) {
    const Json* v = field(object, key);
    if (v != nullptr && v->is_string()) return v->get<std::string>();
    if (v != nullptr) fail(std::string("'") + key + "' is not a string");
    return "";
  }
  double number(const Json& object, const char* key) {
    const Json* v = field(object, key);
    if (v != nullptr && v->is_number()) return v->get<double>();
    if (v != nullptr) fail(std::string("'") + key + "' is not a number");
    return 0;
  }
  std::uint64_t count(const Json& object, const char* key) {
    const Json* v = field(object, key);
    if (v != nullptr &&
        (v->is_number_unsigned() || (v->is_number_integer() && v->get<std::int64_t>() >= 0))) {
      return v->get<std::uint64_t>();
    }
    if (v != nullptr) fail(std::string("'") + key + "' is not a non-negative integer");
    return 0;
  }
  bool flag(const Json& object, const char* key) {
    const Json* v = field(object, key);
    if (v != nullptr && v->is_boolean()) return v->get<bool>();
    if (v != nullptr) fail(std::string("'") + key + "' is not a boolean");
    return false;
  }
  LatencyFigures latency(const Json& object) {
    return LatencyFigures{count(object, "count"), number(object, "min"), number(object, "mean"),
                          number(object, "p50"),  number(object, "p90"), number(object, "p99"),
                          number(object, "max")};
  }
  void fail(const std::string& what) {
    if (error_.empty()) error_ = "kvx-bare-ucp result: " + what;
  }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

}  // namespace

LatencyFigures latencyFigures(const workload::LatencySummary& s) {
  return LatencyFigures{s.count, us(s.min), us(s.mean), us(s.p50), us(s.p90), us(s.p99), us(s.max)};
}

void describeOptions(const BareUcpOptions& o, BareUcpResult& r) {
  r.mode = o.memcpyOnly ? "memcpy-only" : o.fixedOverhead ? "fixed-overhead" : "loop";
  r.transport = o.transport;
  r.netDevices = o.netDevices;
  r.alloc = std::string(toString(o.alloc));
  r.memory = std::string(toString(o.memory));
  r.device = o.device;
  r.op = std::string(toString(o.op));
  r.pattern = std::string(toString(o.pattern));
  r.notify = o.notifies();
  r.targetSpinUs = o.targetSpinUs;
  r.initiatorCpu = o.initiatorCpu;
  r.targetCpu = o.targetCpu;
  r.segmentBytes = o.segmentBytes;
  r.segments = o.segments;
  r.window = o.window;
  r.bufferBytes = o.effectiveBufferBytes();
  r.warmupRequests = o.warmupRequests;
}

std::string toJson(const BareUcpResult& r) {
  Json memcpy = nullptr;
  if (r.memcpy) {
    memcpy = Json{{"segmentBytes", r.memcpy->segmentBytes},
                  {"bufferBytes", r.memcpy->bufferBytes},
                  {"bytes", r.memcpy->bytes},
                  {"seconds", r.memcpy->seconds},
                  {"gbps", r.memcpy->gbps}};
  }
  const Json object{
      {"tool", "kvx-bare-ucp"},
      {"schemaVersion", kSchemaVersion},
      {"ucxVersion", r.ucxVersion},
      {"mode", r.mode},
      {"transport", r.transport},
      {"netDevices", r.netDevices},
      {"alloc", r.alloc},
      {"memory", r.memory},
      {"device", r.device},
      {"settings", r.settings},
      {"lanes", r.lanes},
      {"op", r.op},
      {"pattern", r.pattern},
      {"notify", r.notify},
      {"targetSpinUs", r.targetSpinUs},
      {"initiatorCpu", r.initiatorCpu},
      {"targetCpu", r.targetCpu},
      {"segmentBytes", r.segmentBytes},
      {"segments", r.segments},
      {"window", r.window},
      {"bufferBytes", r.bufferBytes},
      {"requests", r.requests},
      {"warmupRequests", r.warmupRequests},
      {"seconds", r.seconds},
      {"payloadBytes", r.payloadBytes},
      {"gbps", r.gbps},
      {"opsPerSecond", r.opsPerSecond},
      {"requestsPerSecond", r.requestsPerSecond},
      {"latencyUs",
       {{"initiator", latencyJson(r.initiatorLatency)},
        {"receiver", r.receiverLatency ? latencyJson(*r.receiverLatency) : Json(nullptr)}}},
      {"cpuUsPerRequest",
       {{"initiator", r.initiatorCpuUsPerRequest}, {"target", r.targetCpuUsPerRequest}}},
      {"verify", {{"checked", r.verify.checked}, {"ok", r.verify.ok}, {"detail", r.verify.detail}}},
      {"memcpy", memcpy}};
  return object.dump();
}

Result<BareUcpResult> parseBareUcpResult(std::string_view text) {
  const Json object = Json::parse(text.begin(), text.end(), nullptr, false);
  if (object.is_discarded() || !object.is_object()) {
    return invalidArgument("kvx-bare-ucp result: not a JSON object (" +
                           std::to_string(text.size()) + " bytes: '" +
                           std::string(text.substr(0, 80)) + "')");
  }
  JsonFieldReader in;
  if (in.text(object, "tool") != "kvx-bare-ucp") in.fail("'tool' is not \"kvx-bare-ucp\"");
  if (in.count(object, "schemaVersion") != kSchemaVersion) {
    in.fail("'schemaVersion' is not " + std::to_string(kSchemaVersion));
  }
  BareUcpResult r;
  r.ucxVersion = in.text(object, "ucxVersion");
  r.mode = in.text(object, "mode");
  r.transport = in.text(object, "transport");
  r.netDevices = in.text(object, "netDevices");
  r.alloc = in.text(object, "alloc");
  if (object.contains("memory")) {
    r.memory = in.text(object, "memory");
    r.device = static_cast<std::int64_t>(in.number(object, "device"));
  }
  r.settings = in.text(object, "settings");
  r.lanes = in.text(object, "lanes");
  r.op = in.text(object, "op");
  r.pattern = in.text(object, "pattern");
  r.notify = in.flag(object, "notify");
  r.targetSpinUs = in.number(object, "targetSpinUs");
  // Added after the first version: optional for a reader.
  if (object.contains("initiatorCpu")) {
    r.initiatorCpu = static_cast<std::int64_t>(in.number(object, "initiatorCpu"));
  }
  if (object.contains("targetCpu")) {
    r.targetCpu = static_cast<std::int64_t>(in.number(object, "targetCpu"));
  }
  r.segmentBytes = in.count(object, "segmentBytes");
  r.segments = in.count(object, "segments");
  r.window = in.count(object, "window");
  r.bufferBytes = in.count(object, "bufferBytes");
  r.requests = in.count(object, "requests");
  r.warmupRequests = in.count(object, "warmupRequests");
  r.seconds = in.number(object, "seconds");
  r.payloadBytes = in.count(object, "payloadBytes");
  r.gbps = in.number(object, "gbps");
  r.opsPerSecond = in.number(object, "opsPerSecond");
  r.requestsPerSecond = in.number(object, "requestsPerSecond");
  if (const Json* latency = in.field(object, "latencyUs")) {
    if (const Json* initiator = in.field(*latency, "initiator")) {
      r.initiatorLatency = in.latency(*initiator);
    }
    const Json* receiver = in.field(*latency, "receiver");
    if (receiver != nullptr && !receiver->is_null()) r.receiverLatency = in.latency(*receiver);
  }
  if (const Json* cpu = in.field(object, "cpuUsPerRequest")) {
    r.initiatorCpuUsPerRequest = in.number(*cpu, "initiator");
    r.targetCpuUsPerRequest = in.number(*cpu, "target");
  }
  if (const Json* verify = in.field(object, "verify")) {
    r.verify = VerifyFigures{in.flag(*verify, "checked"), in.flag(*verify, "ok"),
                             in.text(*verify, "detail")};
  }
  const Json* memcpy = in.field(object, "memcpy");
  if (memcpy != nullptr && !memcpy->is_null()) {
    r.memcpy = MemcpyFigures{in.count(*memcpy, "segmentBytes"), in.count(*memcpy, "bufferBytes"),
                             in.count(*memcpy, "bytes"), in.number(*memcpy, "seconds"),
                             in.number(*memcpy, "gbps")};
  }
  if (!in.error().empty()) return invalidArgument(in.error());
  return r;
}

std::string summaryLine(const BareUcpResult& r) {
  char text[512];
  std::string receiver;
  if (r.receiverLatency) {
    char part[64];
    std::snprintf(part, sizeof(part), " (receiver %.1f us)", r.receiverLatency->p50);
    receiver = part;
  }
  std::string memcpy;
  if (r.memcpy) {
    char part[96];
    std::snprintf(part, sizeof(part), ", memcpy %.2f GB/s", r.memcpy->gbps);
    memcpy = part;
  }
  if (r.mode == "memcpy-only") return "bare memcpy" + memcpy;
  std::snprintf(
      text, sizeof(text),
      "bare ucp %s (%s) %s%s %s %llu B x%llu w%llu %s: %.3f GB/s, %.0f ops/s, p50 %.1f us%s, "
      "cpu %.1f/%.1f us/req, verify %s%s",
      r.transport.c_str(), r.lanes.c_str(), r.memory == "host" ? "" : (r.memory + " ").c_str(),
      r.mode.c_str(), r.op.c_str(), static_cast<unsigned long long>(r.segmentBytes),
      static_cast<unsigned long long>(r.segments), static_cast<unsigned long long>(r.window),
      r.pattern.c_str(), r.gbps, r.opsPerSecond, r.initiatorLatency.p50, receiver.c_str(),
      r.initiatorCpuUsPerRequest, r.targetCpuUsPerRequest,
      !r.verify.checked ? "off"
      : r.verify.ok     ? "ok"
                        : "FAILED",
      memcpy.c_str());
  return text;
}

}  // namespace kvx::bench
