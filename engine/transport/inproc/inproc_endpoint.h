#pragma once

// InprocEndpoint: an endpoint of InprocTransport. Remote keys are fabric memory ids.

#include <atomic>
#include <cstdint>

#include "engine/transport/endpoint.h"
#include "engine/transport/transport.h"

namespace kvx::engine::inproc {

class InprocTransport;

class InprocRemoteKey final : public RemoteKey {
 public:
  explicit InprocRemoteKey(std::uint64_t memoryId) : memoryId_(memoryId) {}
  std::uint64_t memoryId() const { return memoryId_; }

 private:
  std::uint64_t memoryId_;
};

class InprocEndpoint final : public Endpoint {
 public:
  InprocEndpoint(InprocTransport& owner, std::uint64_t target, EndpointErrorHandler onError);

  Result<std::unique_ptr<RemoteKey>> unpackRemoteKey(std::span<const std::uint8_t> packed,
                                                     MemoryKind kind) override;
  void put(const RmaOp& op, Completion* completion) override;
  void get(const RmaOp& op, Completion* completion) override;
  void flush(Completion* completion) override;
  void sendMessage(std::span<const std::uint8_t> header, std::span<const std::uint8_t> payload,
                   Completion* completion) override;
  void close(bool force) override;
  bool failed() const override { return failed_.load(); }
  std::string description() const override { return "inproc/memcpy"; }
  bool copiesWhenPosted() const override { return true; }

  // Called by the owner's progress(): returns true if the peer disappeared just now.
  bool detectPeerLoss();

 private:
  void copy(const RmaOp& op, bool toRemote, Completion* completion);
  bool rejectIfUnusable(Completion* completion);

  InprocTransport& owner_;
  std::uint64_t target_;
  EndpointErrorHandler onError_;
  std::atomic<bool> closed_{false};
  std::atomic<bool> failed_{false};
};

}  // namespace kvx::engine::inproc
