#pragma once

// Private to control_channel*.cc: the state behind ControlChannel and who owns it.
//
// Ownership: everything below "channel-thread state" is read and written only on the
// channel's thread (the one running io_). The few fields the public API touches from other
// threads are immutable after start or guarded by mutex_.

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "agent/channel/control_channel.h"
#include "agent/channel/control_connection.h"
#include "agent/channel/frame.h"
#include "agent/channel/messages/auth_bytes.h"
#include "agent/channel/messages/message.h"
#include "agent/channel/result_slot.h"
#include "agent/channel/stream/byte_stream.h"
#include "agent/channel/stream/tls_context.h"
#include "sync/mutex.h"

namespace kvx::agent::channel {

class ControlChannel::Impl {
 public:
  using MetadataSlot = ResultSlot<engine::PeerMetadata>;

  Impl(ChannelOptions options, ChannelHandlers handlers);

  Status listen();
  // The start-up log line: whether peers must authenticate, and where it listens.
  void logStart() const;
  void run();
  bool onChannelThread() const { return std::this_thread::get_id() == threadId_; }
  // Posts `work` to the channel thread unless stop() has begun; false if it has.
  template <typename Work>
  bool post(Work&& work);

  // ---- channel thread: lifecycle and connections (control_channel.cc) ----
  void accept();
  void startConnect(boost::asio::ip::tcp::endpoint endpoint, std::vector<std::uint8_t> hello,
                    Deadline deadline, std::shared_ptr<MetadataSlot> slot);
  void beginStop();
  void maybeFinishStop();

  // ---- channel thread: links and messages (control_channel_links.cc) ----
  struct Link {
    enum class State { kHandshake, kEstablished, kClosing };
    // Where the authentication part of the handshake stands (control_channel_auth.cc):
    // kDone when there is none or it succeeded; else the message awaited.
    enum class Auth { kDone, kAwaitBegin, kAwaitChallenge, kAwaitResponse };
    std::shared_ptr<ControlConnection> connection;
    bool inbound = true;
    State state = State::kHandshake;
    Auth auth = Auth::kDone;
    bool refused = false;  // closed at accept by an admission limit: counted, not logged
    std::string remoteIp;  // inbound: the address the per-address limit counts
    AuthBytes clientNonce{};
    AuthBytes serverNonce{};
    std::vector<std::uint8_t> hello;     // outbound with a token: sent once the server proved
    std::string peer;                    // set when established
    Clock::time_point establishedAt;     // set when established
    bool notifyOnClose = false;          // established and not closed quietly
    std::shared_ptr<MetadataSlot> slot;  // outbound, until the handshake ends
    // Inbound, after a HelloAck that knew the client: its hello's metadata, until its first
    // message (a Rejoin uses it).
    std::optional<engine::PeerMetadata> rejoinable;
    // Outbound, between a Rejoin sent and its RejoinAck: the server's HelloAck, held back.
    std::optional<HelloAck> awaitingRejoinAck;

    // "peer 'a' at 127.0.0.1:4000", or just the address before the handshake.
    std::string describe() const {
      const std::string& address = connection->remoteAddress();
      return peer.empty() ? address : "peer '" + peer + "' at " + address;
    }
  };
  void addLink(boost::asio::ip::tcp::socket socket, bool inbound, Deadline handshakeDeadline,
               std::shared_ptr<MetadataSlot> slot, std::vector<std::uint8_t> hello);
  void onFrame(std::uint64_t id, Frame frame);
  // ---- channel thread: authentication (control_channel_auth.cc) ----
  // Starts the link's side of the exchange: a server awaits auth_begin, a client sends it.
  void beginAuth(Link& link);
  // A message on a link whose auth is not kDone.
  void onAuthMessage(Link& link, Message message);
  // The peer's ErrorMessage during the handshake: ends the link with the peer's status.
  void onHandshakeError(Link& link, const ErrorMessage& error);
  // ---- channel thread: admission (control_channel_admission.cc) ----
  // OK, or RESOURCE_EXHAUSTED when an inbound connection from `remoteIp` would exceed a
  // limit.
  Status admit(const std::string& remoteIp) const;
  // Sends `why` and closes `socket` at once, logging only the first refusal of a spell.
  void refuse(boost::asio::ip::tcp::socket socket, const Status& why);
  // An inbound connection was admitted: ends a spell of refusals (logs their count).
  void noteAdmitted();
  void onHello(std::uint64_t id, Link& link, Hello hello);
  // ---- channel thread: views that differ (control_channel_rejoin.cc) ----
  // Whether this agent knows `remote`: holdsPeer says yes and a link other than `except` to
  // its name is established.
  bool knows(const engine::PeerMetadata& remote, std::uint64_t except) const;
  // The client's side of a HelloAck: sends Rejoin (and waits) when the server knew us but we
  // no longer know it; has onPeerStartedOver forget the server when we know it but it no
  // longer knew us; then completes the connect.
  void onHelloAck(std::uint64_t id, Link& link, HelloAck ack);
  // A message on an outbound link awaiting RejoinAck.
  void onRejoinReply(Link& link, Message message);
  // The server's side: a Rejoin on a link whose HelloAck knew the client.
  void onRejoin(Link& link);
  // Hands the peer's metadata to the connect() caller and establishes the link.
  void finishConnect(Link& link, HelloAck ack);
  void onEstablishedMessage(std::uint64_t id, Link& link, Message message);
  // Sends an ErrorMessage (best effort) and closes the link's connection.
  void failLink(Link& link, const Status& why);
  // The handshake is done: the link becomes established and, if the peer announced a
  // timeout, heartbeats start both ways.
  void establish(Link& link, std::string peer, std::optional<std::uint64_t> peerTimeoutMs);
  // Sends a Goodbye and closes the link's connection.
  void sayGoodbye(Link& link, const std::string& reason, Status why,
                  std::chrono::milliseconds linger);
  void onClosed(std::uint64_t id, const Status& why);
  void broadcast(const std::vector<std::uint8_t>& update);
  // The established links to `peer` made before `before` (all of them: time_point::max()).
  Status disconnectPeer(const std::string& peer, Clock::time_point before);
  // PROTOCOL_ERROR unless a metadata update names the peer its link's handshake named.
  static Status checkUpdateName(const std::string& handshakeName, const MetadataUpdate& update);
  Result<Clock::time_point> lastHeardFromPeer(const std::string& peer) const;

  // Runs `work` on the channel thread (at once when called on it) and returns its result:
  // FAILED_PRECONDITION once stopping, TIMED_OUT when the thread does not answer within
  // options_.readTimeout. `what` names the call in those errors.
  template <typename T>
  Result<T> callOnChannelThread(const std::function<Result<T>()>& work, const std::string& what);

  // ---- immutable after start ----
  const ChannelOptions options_;
  const ChannelHandlers handlers_;
  std::shared_ptr<boost::asio::ssl::context> tls_;  // null without TLS; shared by the streams
  std::string listenAddress_;
  std::string logName_;  // "control channel 127.0.0.1:4000", for log lines

  // Declared before everything holding sockets or timers, so destroyed after them.
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread thread_;
  std::thread::id threadId_;

  sync::Mutex mutex_;
  bool stopped_ KVX_GUARDED_BY(mutex_) = false;  // no more work is posted once set
  sync::Mutex stopMutex_;  // held by the thread joining, so a second stop() waits for it

  // ---- channel-thread state ----
  boost::asio::ip::tcp::acceptor acceptor_{io_};
  boost::asio::steady_timer acceptRetry_{io_};
  boost::asio::steady_timer stopTimer_{io_};
  bool stopping_ = false;
  std::uint64_t nextId_ = 1;
  std::map<std::uint64_t, Link> links_;
  struct Attempt {
    std::shared_ptr<boost::asio::ip::tcp::socket> socket;
    std::shared_ptr<boost::asio::steady_timer> timer;
    std::shared_ptr<MetadataSlot> slot;
  };
  std::map<std::uint64_t, Attempt> attempts_;
  std::uint64_t refusedInSpell_ = 0;  // refusals since the last admitted connection
};

template <typename Work>
bool ControlChannel::Impl::post(Work&& work) {
  sync::MutexLock lock(mutex_);
  if (stopped_) return false;
  boost::asio::post(io_, std::forward<Work>(work));
  return true;
}

}  // namespace kvx::agent::channel
