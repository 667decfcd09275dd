#pragma once

// Everything an Agent can be configured with. Defaults suit a single node test on 127.0.0.1.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// Declarations here are libkvx.so's exports (api/shared_library/).
#pragma GCC visibility push(default)
namespace kvx {

enum class ProgressMode : std::uint8_t {
  kThread = 0,  // the agent runs its own event-driven progress thread (default)
  kCaller = 1,  // the caller must call Agent::progress() often enough
};

// TLS on the control channel (the metadata exchange between agents; the data path is UCX's).
// When `enabled`, every control connection runs over TLS 1.2 or later (1.3 when both sides
// have it) with mutual authentication: this agent presents `certFile` (PEM, with any
// intermediate CAs after it) and `keyFile` (PEM, unencrypted), and a peer's certificate must
// chain to a certificate in `caFile`, both ways; a listener refuses clients without one.
// There is no host name or IP check (agents address each other by IP): any certificate the
// CA issued is accepted, so use a CA that issues certificates to kvx agents only. A peer
// with an untrusted certificate, or one without TLS, fails with UNAUTHENTICATED.
// Agent::create: INVALID_ARGUMENT when enabled without all three files or with a file that
// is not what it should be, NOT_FOUND for one that cannot be read. When not enabled the
// files are not used.
struct ControlTlsOptions {
  bool enabled = false;
  std::string certFile;
  std::string keyFile;
  std::string caFile;
};

// How GPU memory moves (a region registered or allocated as MemoryKind::kCuda).
//   kAuto:   directly when the transport can register GPU memory (a UCX built with CUDA:
//            cuda_ipc on one node, GPUDirect RDMA across nodes), staged through pinned host
//            buffers otherwise;
//   kDirect: directly, or not at all: registering GPU memory the transport cannot move fails
//            with FAILED_PRECONDITION naming the reason (e.g. "UCX 1.13.1 was built without
//            CUDA support");
//   kStaged: always staged through host buffers, even when the transport could move it (the
//            "GPUDirect off" side of a comparison, or a way around a broken direct path).
//            This agent then counts as one that cannot move GPU memory directly: it reaches
//            a peer's GPU memory through the peer's staging window only, so a peer that
//            registered its GPU memory with its transport (kAuto or kDirect with a UCX built
//            with CUDA) is refused that memory; give both agents the same path to compare.
// The engine logs its choice at start-up ("GPUDirect: ..."), and
// Agent::dataPathDescription says per peer how GPU memory moves.
enum class GpuPath : std::uint8_t { kAuto = 0, kDirect = 1, kStaged = 2 };
std::string_view toString(GpuPath path);  // "auto", "direct", "staged"
std::optional<GpuPath> parseGpuPath(std::string_view text);

// How kvx's socket transport (`transport` "socket") protects what its data connections
// carry. Every request is authenticated and its header encrypted whatever the choice: the
// connection's keys come from a secret each agent draws at start-up and hands its peers only
// inside the control channel's handshake (encrypted when the agents authenticate with a
// token or TLS), so a party on the path can neither make a request the target takes nor
// change, move or replay one, nor read a region's keys.
//   kHeaders:       only that: the blocks cross in clear and unauthenticated (a party on
//                   the path can read them, and change them on the way undetected); costs
//                   next to nothing;
//   kAuthenticated: the blocks carry a tag too: a block changed on the way fails its
//                   request instead of landing (an observer can still read them);
//   kEncrypted:     the blocks are encrypted too (AES-256-GCM);
//   kAuto:          the KVX_DATA_PROTECTION environment variable ("headers",
//                   "authenticated" or "encrypted") if set, else encrypted where peers may
//                   be on other hosts (a token, TLS or allowUnauthenticated) and headers
//                   where they are this host's processes (loopback only).
// Protecting the blocks costs CPU on both sides (docs/benchmarks.md). A connection gets the
// stronger of what its two ends ask for. UCX's transports protect nothing of their own
// (docs/reliability.md).
enum class DataProtection : std::uint8_t {
  kAuto = 0,
  kHeaders = 1,
  kAuthenticated = 2,
  kEncrypted = 3
};
// "auto", "headers", "authenticated", "encrypted"
std::string_view toString(DataProtection protection);
std::optional<DataProtection> parseDataProtection(std::string_view text);

struct AgentOptions {
  // Unique name of this agent among the agents it talks to.
  std::string name;

  // Control-channel listen address "host:port"; port 0 picks a free one (see
  // Agent::listenAddress()). An empty string disables listening (connect-only agent).
  std::string listenAddress = "127.0.0.1:0";

  // Data-path backend, by registry name: "ucx" (default), "socket" (kvx's own TCP data
  // path, no UCX: for hosts without RDMA; see docs/architecture.md) or "inproc" (tests
  // only). selectDataPath() sets it from the names operators use.
  std::string transport = "ucx";

  // UCX transports to use, as UCX_TLS would take them ("tcp", "sm", "tcp,sm", ...), plus
  // the shorthand "shm" for shared memory. Empty: UCX's own selection. An explicit UCX_TLS
  // in the environment wins.
  std::string ucxTransports;

  // The data path's network devices, as UCX_NET_DEVICES takes them ("eth0", "mlx5_0:1",
  // "lo,veth1"), or "auto" (the default): loopback alone for an agent that admits local
  // peers only (no token, TLS or allowUnauthenticated), else every interface that is up, so
  // that a peer on another host is reached on the interface that routes to it and one on
  // this host over loopback or shared memory. An explicit UCX_NET_DEVICES in the environment
  // wins. The socket transport reads both the same way: it listens on, and publishes, these
  // interfaces' IPv4 addresses, and tries a peer's loopback addresses only where the peer
  // published no other.
  std::string ucxNetDevices = "auto";

  ProgressMode progressMode = ProgressMode::kThread;

  // How long the progress thread spins on an idle worker before it sleeps on the event fd.
  std::chrono::microseconds progressSpin{50};

  // Deadlines.
  std::chrono::milliseconds connectTimeout{5000};
  std::chrono::milliseconds controlReadTimeout{5000};
  // How long cancel waits for in-flight operations before it resets the endpoint.
  std::chrono::milliseconds cancelGrace{200};

  // Peer liveness on the control channel. Each side of an established control link sends a
  // heartbeat every `heartbeatInterval` (more often if the peer's own peerTimeout is under
  // twice that), and any frame received counts as a sign of life. When nothing has arrived
  // from a peer for `peerTimeout`, the link is closed and the peer is handled exactly as if
  // the connection had broken: its pending transfers fail with PEER_FAILED ("no sign of
  // life from 'decode-0' for 2.0 s (peer timeout)") and it is forgotten. This is what
  // detects a hung (stopped) peer or a cut link, which neither TCP nor UCX report in useful
  // time; a killed peer is usually seen sooner, when its socket closes. Detection takes
  // between peerTimeout and peerTimeout plus a few milliseconds after the last frame.
  // Peers that do not announce heartbeats at the handshake (kvx versions without them) are
  // neither sent heartbeats nor timed out: only a closed connection reveals their failure.
  // REQUIRES: 10 ms <= heartbeatInterval < peerTimeout (Agent::create: INVALID_ARGUMENT).
  std::chrono::milliseconds peerTimeout{2000};
  std::chrono::milliseconds heartbeatInterval{500};

  // Control channel limits.
  std::uint32_t maxFrameBytes = 16u << 20;
  // Inbound control connections open at once from one IP address, and inbound handshakes
  // in progress at once; an excess connection is refused (RESOURCE_EXHAUSTED) and closed.
  std::uint32_t maxControlConnectionsPerAddress = 64;
  std::uint32_t maxPendingHandshakes = 64;

  // Control channel authentication. With a shared secret (the same on every agent), a peer
  // must prove it holds it (HMAC-SHA256 challenge-response, both ways) before either side
  // sends its metadata; a peer without it fails with UNAUTHENTICATED. The secret is
  // `authToken` if set, else the contents of `authTokenFile` (trailing whitespace stripped),
  // else the KVX_AUTH_TOKEN environment variable; at least 16 bytes. It is never logged.
  // The token works alone or on top of TLS (`tls`). With neither, the control channel is
  // unauthenticated, and `listenAddress` must then be a loopback address (Agent::create:
  // INVALID_ARGUMENT) unless `allowUnauthenticated`; TLS alone (client certificates) allows
  // any address.
  std::string authToken;
  std::string authTokenFile;
  bool allowUnauthenticated = false;
  ControlTlsOptions tls;

  // How this agent's GPU memory moves (see GpuPath).
  GpuPath gpuPath = GpuPath::kAuto;

  // How the socket transport's data connections are protected (see DataProtection).
  DataProtection dataProtection = DataProtection::kAuto;

  // How many RMA operations one transfer keeps in flight at a time.
  std::uint32_t maxOpsInFlight = 256;

  // What the application on top says about itself to every peer: carried in this agent's
  // metadata (the control channel's handshake, an exported blob) and shown to peers as
  // PeerInfo::applicationInfo, so that an application's own description of a peer arrives
  // with the peer rather than in a second handshake (KvAgent puts its role and KV pool
  // here). Opaque to kvx; fixed for the agent's lifetime. At most kMaxApplicationInfoBytes of
  // valid UTF-8 (Agent::create: INVALID_ARGUMENT). Empty: none.
  std::string applicationInfo;
};

inline constexpr std::size_t kMaxApplicationInfoBytes = 64 * 1024;

// Picks the data path by the name an operator gives it: "shm" or "tcp" (UCX over shared
// memory or over tcp), "socket" (kvx's own TCP transport, no UCX), "inproc" (tests). Sets
// `transport` and `ucxTransports`; false, changing nothing, for any other name.
bool selectDataPath(AgentOptions& options, std::string_view name);

}  // namespace kvx
#pragma GCC visibility pop
