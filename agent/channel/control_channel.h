#pragma once

// ControlChannel: the agents' rendezvous layer. Each agent listens on a TCP address; a peer
// connects, sends Hello with its metadata, and gets HelloAck with ours (or an ErrorMessage
// and a closed connection). The connection then stays open as the link between the two
// agents: metadata updates and orderly goodbyes travel on it, and its loss tells each side
// that the other is gone. Wire format: frame.h and messages/.
//
// Threading: the channel owns an io_context and one thread that runs it. That thread owns
// all channel state (listener, links, pending connects); public calls hand work to it and,
// where they return a result, wait for it with a deadline. Every public member function may
// be called from any thread concurrently, except that the destructor must not run on the
// channel's thread (i.e. not from a handler).
//
// Handlers run on the channel's thread, never under a lock of the channel; they must not
// block (in particular, must not call connect() or disconnect(), which fail with
// FAILED_PRECONDITION when called from the channel's thread). No handler runs once stop()
// has begun.
//
// Robustness: a malformed frame or message, a silent client (no Hello within readTimeout),
// a frame left incomplete for readTimeout, or a peer that stops reading for readTimeout
// closes that connection only (after a best-effort ErrorMessage); others are unaffected.
// Memory for a frame grows with the bytes that arrive, not with the length it announces.
// Admission: an inbound connection beyond maxConnectionsPerAddress from one IP address,
// beyond maxPendingHandshakesPerAddress handshakes in progress from its IP address, or beyond
// maxPendingHandshakes handshakes in progress in all, is sent RESOURCE_EXHAUSTED and closed
// at once; the first refusal of a spell is logged, the rest only counted.
//
// Authentication: with an authToken, the whole handshake (which must finish within
// readTimeout, or the connect deadline) starts with a mutual HMAC-SHA256 challenge-response
// (messages/auth_begin.h, auth_proof.h): the listener sends no metadata to a client, and a
// client sends none to a listener, that has not proved it holds the same token. A missing or
// wrong proof ends the connection with UNAUTHENTICATED on both sides ("peer at X requires
// authentication", "peer at X did not authenticate", "... failed authentication"); the
// listener's other connections are unaffected. After it every frame is encrypted and
// authenticated (frame_seal.h): an observer on the path reads no metadata. Without a token or TLS
// the channel listens only on loopback addresses unless allowUnauthenticated is set.
//
// TLS: with options.tls enabled every connection runs over TLS (1.2 at least) with mutual
// certificate authentication against the configured CA and no host name check (policy:
// stream/tls_context.h). The TLS handshake is part of the connection's handshake: it counts
// against readTimeout (the connect deadline when connecting) and against
// maxPendingHandshakes, so a slow TLS client holds no slot for longer than a slow plain one.
// A token, if set, is still required on top. A peer whose certificate is not trusted, or
// that rejects ours, ends the connection with UNAUTHENTICATED on both sides; a plain-TCP
// peer of a TLS listener is answered in plain with UNAUTHENTICATED ("requires TLS") and
// closed, and a TLS client of a plain listener fails with UNAUTHENTICATED ("does not speak
// TLS"). The listener's other connections are unaffected.
//
// Views that differ: a peer may drop all it holds for this agent and connect again before
// this agent sees the old link close (it closed it itself; the goodbye is still in flight).
// The handshake tells this apart from a second link of a peer that keeps its state: the
// server says in HelloAck whether it knew the client, the client compares with what it
// holds itself, and either side that still holds a session the other dropped forgets it
// (onPeerStartedOver) before the connect returns (messages/rejoin.h).
//
// Liveness: both sides announce their peerTimeout in the handshake and then send each other
// heartbeats (messages/heartbeat.h), every heartbeatInterval or twice per the peer's
// timeout, whichever is more often. An established link on which nothing has arrived for
// peerTimeout is closed at once (no goodbye: the peer is presumed unable to read) and
// reported by onPeerDisconnected like a broken connection, with PEER_FAILED "no sign of
// life from '<peer>' for 2.0 s (peer timeout)". A peer that announced no timeout (a version
// without heartbeats) is neither sent heartbeats nor timed out.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "agent/channel/stream/tls_context.h"
#include "engine/peer/peer_metadata.h"
#include "kvx/result.h"
#include "kvx/status.h"
#include "kvx/transfer.h"

namespace kvx::agent::channel {

// With an auth token, the largest frame a peer may send before it has authenticated: the
// authentication messages are a few hundred bytes, so nobody without the token can make the
// channel thread read and parse megabytes.
inline constexpr std::uint32_t kMaxUnauthenticatedFrameBytes = 16u << 10;

struct ChannelOptions {
  // "host:port" (IPv4 or [IPv6] literal) to listen on; port 0 picks a free port. Empty: do
  // not listen (connect-only).
  std::string listenAddress = "127.0.0.1:0";
  // Deadline for connect() calls that do not pass one.
  std::chrono::milliseconds connectTimeout{5000};
  // How long an accepted connection may take to send its Hello, a started frame may take to
  // complete, and a write may take before the peer is deemed dead.
  std::chrono::milliseconds readTimeout{5000};
  // Largest frame payload accepted or sent (before a peer authenticated, at most
  // kMaxUnauthenticatedFrameBytes).
  std::uint32_t maxFrameBytes = 16u << 20;
  // Liveness of established links (see above). REQUIRES: 10 ms <= heartbeatInterval <
  // peerTimeout <= 24 h.
  std::chrono::milliseconds peerTimeout{2000};
  std::chrono::milliseconds heartbeatInterval{500};
  // The shared secret peers must prove they hold (see Authentication above); empty: none.
  // At least kMinAuthTokenBytes (auth_token.h). Never logged.
  std::string authToken;
  // TLS for every connection (see TLS above). validateChannelOptions checks that the three
  // files are named; start() reads them.
  TlsConfig tls;
  // Without authToken or TLS, listenAddress must be a loopback address unless this is set.
  bool allowUnauthenticated = false;
  // Admission (see above): inbound connections open at once from one IP address, and inbound
  // handshakes in progress at once. REQUIRES: >= 1.
  std::uint32_t maxConnectionsPerAddress = 64;
  std::uint32_t maxPendingHandshakes = 64;
  // Inbound handshakes in progress at once from one IP address. A quarter of
  // maxPendingHandshakes: one address that opens connections and stays silent holds at
  // most 16 slots until readTimeout closes them, so at least four misbehaving addresses are
  // needed to lock honest peers out, while a host that legitimately (re)connects many agents
  // at once (one per GPU, or a restart of the whole host) still handshakes 16 links in
  // parallel; the rest just wait a handshake's time and retry. REQUIRES: >= 1.
  std::uint32_t maxPendingHandshakesPerAddress = 16;
};

// OK, or INVALID_ARGUMENT naming the option and the values at fault (a non-loopback
// listenAddress without authToken, TLS or allowUnauthenticated among them). Reads no file.
// start() checks this; callers that build ChannelOptions from their own options may check
// earlier.
Status validateChannelOptions(const ChannelOptions& options);

struct ChannelHandlers {
  // A peer connected to us and said Hello. Return our metadata to accept (sent in HelloAck),
  // or an error, which is sent back as an ErrorMessage before the connection is closed. A
  // Hello with the name of an already connected peer is passed through: this handler decides.
  std::function<Result<engine::PeerMetadata>(const engine::PeerMetadata& remote)> onHello;
  // An established peer sent new metadata (its name is unchanged: checked by the channel).
  std::function<void(const engine::PeerMetadata& remote)> onMetadataUpdate;
  // The last link with this peer name that completed its handshake (either direction)
  // closed, for any reason but stop(): the peer said Goodbye or we called disconnect()
  // (CANCELLED), the connection broke (PEER_FAILED, TIMED_OUT) or the peer broke the protocol
  // (PROTOCOL_ERROR); `why` is the reason the last link closed. While another established
  // link to the same name remains (a link each way, or a restarted peer's new link), the
  // close of one is only logged.
  std::function<void(const std::string& peer, const Status& why)> onPeerDisconnected;
  // Whether this agent holds state for `remote`'s name at its incarnation (an agent: its
  // engine knows that peer). Together with a link to that name still established, this is
  // what a handshake calls knowing the peer (messages/rejoin.h). Null: never.
  std::function<bool(const engine::PeerMetadata& remote)> holdsPeer;
  // A peer this agent knows started over without it: the peer dropped all it held for this
  // agent (it said Rejoin), or, seen from the client, the server no longer knew it
  // (HelloAck::knewYou false while the client knew the server). Forget what is held for the
  // peer as if its links had closed, failing its work with `why`, and take `remote` as new.
  // An error ends the handshake (sent to the peer, link closed). Null: nothing is held.
  std::function<Status(const engine::PeerMetadata& remote, const Status& why)> onPeerStartedOver;
};

class ControlChannel {
 public:
  // Reads the TLS files (if enabled), binds the listener (if any) and starts the channel's
  // thread. INVALID_ARGUMENT for a bad option or TLS file, NOT_FOUND for a TLS file that
  // cannot be read (makeTlsContext); the bind error (e.g. address in use) otherwise.
  static Result<std::unique_ptr<ControlChannel>> start(ChannelOptions options,
                                                       ChannelHandlers handlers);

  // Calls stop().
  ~ControlChannel();

  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  // The bound address ("127.0.0.1:41234", the real port when 0 was asked); empty when not
  // listening.
  std::string listenAddress() const;

  // Connects to `hostPort`, authenticates (with a token), sends Hello with `local` and waits
  // for the reply, all by `deadline`. Returns the peer's metadata; the connection stays open
  // as the link to that peer. Errors: INVALID_ARGUMENT (bad address or local metadata),
  // TIMED_OUT, PEER_FAILED (refused, closed), PROTOCOL_ERROR, UNAUTHENTICATED, the peer's
  // own code and message when it rejected the hello (RESOURCE_EXHAUSTED over its limits),
  // FAILED_PRECONDITION after stop() or on the channel's thread.
  Result<engine::PeerMetadata> connect(const std::string& hostPort,
                                       const engine::PeerMetadata& local, Deadline deadline);
  // As above, with the deadline options.connectTimeout from now.
  Result<engine::PeerMetadata> connect(const std::string& hostPort,
                                       const engine::PeerMetadata& local);

  // Queues a MetadataUpdate to every established peer, in either direction; does not wait.
  // INVALID_ARGUMENT for invalid metadata, FAILED_PRECONDITION after stop().
  Status broadcastMetadata(const engine::PeerMetadata& local);

  // Sends Goodbye on every link to `peer` and closes them. NOT_FOUND when no established
  // link has that name.
  Status disconnect(const std::string& peer);
  // As disconnect(), for the links to `peer` established before `before` only: a link the
  // peer made since (a reconnect after what ended the old ones) stays. NOT_FOUND when no
  // such link exists.
  Status disconnectOlderThan(const std::string& peer, Clock::time_point before);

  // When a byte last arrived on an established link to `peer` (the latest, if it has
  // several; a link counts from its establishment). NOT_FOUND when no established link has
  // that name; FAILED_PRECONDITION once stopping.
  Result<Clock::time_point> lastHeardFrom(const std::string& peer);

  // Closes the listener and every connection (established peers get a Goodbye, best
  // effort), fails pending connect() calls with CANCELLED, and joins the thread. Bounded
  // even when peers are silent. Idempotent. From a handler it begins the stop and returns.
  void stop();

 private:
  class Impl;
  explicit ControlChannel(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace kvx::agent::channel
