#pragma once

// InprocTransport: a Transport whose peers live in the same process (unit tests, and the
// scriptable fake that agent logic is tested against). Data moves by memcpy at post time;
// completions and messages are delivered from progress(), as a real transport would.

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "engine/transport/transport.h"
#include "sync/mutex.h"

namespace kvx::engine::inproc {

class InprocEndpoint;

class InprocTransport final : public Transport {
 public:
  explicit InprocTransport(const TransportOptions& options);
  ~InprocTransport() override;

  std::string_view name() const override { return "inproc"; }
  std::vector<std::uint8_t> localAddress() const override;
  // Host memory only: data moves by memcpy on the posting thread, which cannot reach device
  // memory, so CUDA regions are staged through host buffers like on a UCX without CUDA.
  bool supportsMemoryKind(MemoryKind kind) const override { return kind == MemoryKind::kHost; }
  std::string whyNotMemoryKind(MemoryKind kind) const override {
    if (supportsMemoryKind(kind)) return {};
    return "the inproc transport copies with memcpy, which cannot reach device memory";
  }
  Result<std::unique_ptr<TransportMemory>> registerMemory(void* address, std::uint64_t length,
                                                          MemoryKind kind, int device) override;
  Result<std::unique_ptr<TransportMemory>> allocateMemory(std::uint64_t length, MemoryKind kind,
                                                          int device) override;
  // Refuses the peer's copies into this transport's memory until a new connect() to it.
  void dropPeer(std::span<const std::uint8_t> peerAddress) override;
  Result<std::shared_ptr<Endpoint>> connect(std::span<const std::uint8_t> peerAddress,
                                            EndpointErrorHandler onError) override;
  void setMessageHandler(MessageHandler handler) override;
  bool progress() override;
  int eventFd() const override { return eventFd_; }
  bool arm() override;
  void wake() override;

  // Used by endpoints (any thread).
  void queueCompletion(const InprocEndpoint* source, Completion* completion, Status status);
  void deliverMessage(std::vector<std::uint8_t> header, std::vector<std::uint8_t> payload);
  // Fires, now, the queued completions of `source` (Endpoint::close(force)).
  void drainCompletions(const InprocEndpoint* source);
  std::uint64_t fabricId() const { return fabricId_; }

 private:
  struct PendingCompletion {
    const InprocEndpoint* source;
    Completion* completion;
    Status status;
  };
  struct Message {
    std::vector<std::uint8_t> header;
    std::vector<std::uint8_t> payload;
  };

  // Runs queued completions and messages (under progressMutex_); true if there were any.
  bool deliver() KVX_EXCLUDES(progressMutex_, mutex_);
  // Reports endpoints whose peer transport is gone; never under progressMutex_.
  bool checkPeers() KVX_EXCLUDES(progressMutex_);

  std::string agentName_;
  std::uint64_t fabricId_ = 0;
  int eventFd_ = -1;

  sync::Mutex progressMutex_;  // one progress() at a time; handlers run under it
  sync::Mutex mutex_;
  std::deque<PendingCompletion> completions_ KVX_GUARDED_BY(mutex_);
  std::deque<Message> inbox_ KVX_GUARDED_BY(mutex_);
  MessageHandler handler_ KVX_GUARDED_BY(mutex_);
  std::vector<std::weak_ptr<InprocEndpoint>> endpoints_ KVX_GUARDED_BY(mutex_);
};

}  // namespace kvx::engine::inproc
