#pragma once

// SocketConnection: what the socket transport's poll loop dispatches to. Each data
// connection is one: an endpoint's (this side initiates) or an inbound one (a peer's
// endpoint, served here).

#include <chrono>
#include <cstdint>

namespace kvx::engine::socket {

class SocketConnection {
 public:
  using Clock = std::chrono::steady_clock;

  // REQUIRES: the transport's lock. `events` are epoll's for this connection's socket.
  // Returns true if anything moved.
  virtual bool onEventsLocked(std::uint32_t events) = 0;
  // REQUIRES: the transport's lock. Called every few milliseconds from progress(): deadlines.
  virtual void onTickLocked(Clock::time_point now) = 0;
  // REQUIRES: the transport's lock. True when the connection has work that no epoll event
  // will announce: frames already read into its buffer but left for fairness, or a failure
  // found while posting. The transport then calls onEventsLocked(EPOLLIN) from its next
  // progress() (and a driver must not sleep).
  virtual bool needsAttentionLocked() const = 0;

 protected:
  ~SocketConnection() = default;
};

}  // namespace kvx::engine::socket
