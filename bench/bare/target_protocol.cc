#include "bench/bare/target_protocol.h"

#include <cstring>

namespace kvx::bench {
namespace {

class WireWriter {
 public:
  void u64(std::uint64_t v) { append(&v, sizeof(v)); }
  void bytes(std::span<const std::uint8_t> b) {
    u64(b.size());
    append(b.data(), b.size());
  }
  std::vector<std::uint8_t> take() { return std::move(out_); }

 private:
  void append(const void* p, std::size_t n) {
    const auto* bytes = static_cast<const std::uint8_t*>(p);
    out_.insert(out_.end(), bytes, bytes + n);
  }
  std::vector<std::uint8_t> out_;
};

class WireReader {
 public:
  WireReader(std::span<const std::uint8_t> in, const char* what) : in_(in), what_(what) {}

  bool u64(std::uint64_t& v, const char* field) {
    if (!need(sizeof(v), field)) return false;
    std::memcpy(&v, in_.data(), sizeof(v));
    in_ = in_.subspan(sizeof(v));
    return true;
  }
  bool bytes(std::vector<std::uint8_t>& b, const char* field) {
    std::uint64_t n = 0;
    if (!u64(n, field) || !need(n, field)) return false;
    b.assign(in_.begin(), in_.begin() + static_cast<std::ptrdiff_t>(n));
    in_ = in_.subspan(n);
    return true;
  }
  Status status() const {
    if (!error_.empty()) return protocolError(error_);
    if (!in_.empty()) {
      return protocolError(std::string(what_) + ": " + std::to_string(in_.size()) +
                           " unexpected trailing bytes");
    }
    return Status::ok();
  }
  std::size_t left() const { return in_.size(); }

 private:
  bool need(std::uint64_t n, const char* field) {
    if (n <= in_.size()) return true;
    if (error_.empty()) {
      error_ = std::string(what_) + ": field '" + field + "' needs " + std::to_string(n) +
               " bytes, " + std::to_string(in_.size()) + " left";
    }
    return false;
  }
  std::span<const std::uint8_t> in_;
  const char* what_;
  std::string error_;
};

}  // namespace

std::vector<std::uint8_t> encode(const TargetHello& hello) {
  WireWriter w;
  w.bytes(hello.workerAddress);
  w.bytes(hello.packedKey);
  w.u64(hello.bufferAddress);
  w.u64(hello.bufferBytes);
  return w.take();
}

std::vector<std::uint8_t> encode(const TargetReport& report) {
  WireWriter w;
  w.u64(report.cpuNs);
  w.u64(report.checksum);
  w.u64(report.notifications.size());
  for (const Notification& n : report.notifications) {
    w.u64(n.requestId);
    w.u64(static_cast<std::uint64_t>(n.receivedNs));
  }
  return w.take();
}

std::vector<std::uint8_t> encodeStop(std::uint64_t notificationsSent) {
  WireWriter w;
  w.u64(notificationsSent);
  return w.take();
}

Result<std::uint64_t> decodeStop(std::span<const std::uint8_t> bytes) {
  WireReader r(bytes, "stop");
  std::uint64_t sent = 0;
  r.u64(sent, "notificationsSent");
  KVX_RETURN_IF_ERROR(r.status());
  return sent;
}

Result<TargetHello> decodeHello(std::span<const std::uint8_t> bytes) {
  WireReader r(bytes, "target hello");
  TargetHello hello;
  r.bytes(hello.workerAddress, "workerAddress") && r.bytes(hello.packedKey, "packedKey") &&
      r.u64(hello.bufferAddress, "bufferAddress") && r.u64(hello.bufferBytes, "bufferBytes");
  KVX_RETURN_IF_ERROR(r.status());
  if (hello.workerAddress.empty() || hello.packedKey.empty()) {
    return protocolError("target hello: empty worker address (" +
                         std::to_string(hello.workerAddress.size()) + " B) or key (" +
                         std::to_string(hello.packedKey.size()) + " B)");
  }
  return hello;
}

Result<TargetReport> decodeReport(std::span<const std::uint8_t> bytes) {
  WireReader r(bytes, "target report");
  TargetReport report;
  std::uint64_t count = 0;
  if (r.u64(report.cpuNs, "cpuNs") && r.u64(report.checksum, "checksum") &&
      r.u64(count, "notificationCount")) {
    if (count > r.left() / 16) {
      return protocolError("target report: " + std::to_string(count) +
                           " notifications announced, " + std::to_string(r.left()) + " bytes left");
    }
    report.notifications.resize(count);
    for (Notification& n : report.notifications) {
      std::uint64_t ns = 0;
      r.u64(n.requestId, "requestId") && r.u64(ns, "receivedNs");
      n.receivedNs = static_cast<std::int64_t>(ns);
    }
  }
  KVX_RETURN_IF_ERROR(r.status());
  return report;
}

}  // namespace kvx::bench
