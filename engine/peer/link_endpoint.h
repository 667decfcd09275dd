#pragma once

// LinkEndpoint: the endpoint a PeerLink hands out: the transport's endpoint, plus what a
// link reset of this agent's own needs. It forwards every operation unchanged, and tracks
// the messages in flight, so that when this agent resets the link (closeForReset), the
// notifications the forced close cancelled are not failed but handed back, with copies of
// their bytes, for RemotePeer::resetLink to send again on the next link. A notification is
// what users and the KV protocol send (an abort among them); losing one to our own reset
// would leave its request waiting for peer loss or its lease. Staging messages are not
// handed back: their senders time them out and ask again. A close that is not a reset
// (the peer failed, the agent shuts down) fails messages in flight as before.
//
// Thread safety: every member may be called from any thread. The per-message bookkeeping
// runs in completion context under a leaf lock and never calls into the transport.

#include <memory>
#include <utility>
#include <vector>

#include "engine/transport/endpoint.h"
#include "kvx/transfer.h"
#include "sync/mutex.h"

namespace kvx::engine {

// A notification that our own reset cancelled: its bytes, and its sender's completion,
// which has not run yet. Whoever takes it must complete it exactly once.
struct CancelledMessage {
  std::vector<std::uint8_t> header;
  std::vector<std::uint8_t> payload;
  Completion* completion = nullptr;
};

class LinkEndpoint final : public Endpoint {
 public:
  explicit LinkEndpoint(std::shared_ptr<Endpoint> inner);
  ~LinkEndpoint() override;

  Result<std::unique_ptr<RemoteKey>> unpackRemoteKey(std::span<const std::uint8_t> packed,
                                                     MemoryKind kind) override {
    return inner_->unpackRemoteKey(packed, kind);
  }
  void put(const RmaOp& op, Completion* completion) override { inner_->put(op, completion); }
  void get(const RmaOp& op, Completion* completion) override { inner_->get(op, completion); }
  void postBatch(std::span<const RmaOp> ops, bool write, Completion* completion) override {
    inner_->postBatch(ops, write, completion);
  }
  void flush(Completion* completion) override { inner_->flush(completion); }
  void sendMessage(std::span<const std::uint8_t> header, std::span<const std::uint8_t> payload,
                   Completion* completion) override;
  void close(bool force) override { inner_->close(force); }
  void forceClose(Deadline deadline) override { inner_->forceClose(deadline); }
  bool failed() const override { return inner_->failed(); }
  std::string description() const override { return inner_->description(); }
  bool copiesWhenPosted() const override { return inner_->copiesWhenPosted(); }
  bool peerWritesDirectly() const override { return inner_->peerWritesDirectly(); }

  // Force-closes the endpoint, waiting for the transport at most until `deadline`, and
  // returns the notifications the close cancelled (in the order they were sent), whose
  // senders' completions have not run: send them again, or complete them.
  std::vector<CancelledMessage> closeForReset(Deadline deadline);

 private:
  struct Tracked;
  struct State {
    sync::Mutex mutex;  // leaf lock
    bool resetting KVX_GUARDED_BY(mutex) = false;
    // Send order, which completions need not keep.
    std::uint64_t nextSequence KVX_GUARDED_BY(mutex) = 0;
    std::vector<std::pair<std::uint64_t, CancelledMessage>> cancelled KVX_GUARDED_BY(mutex);
  };

  std::shared_ptr<Endpoint> inner_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace kvx::engine
