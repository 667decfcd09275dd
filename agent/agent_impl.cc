#include "agent/agent_impl.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <thread>

#include "agent/channel/auth_token.h"
#include "agent/logging.h"
#include "agent/metadata/metadata_codec.h"
#include "agent/net_devices.h"

namespace kvx {

namespace {

// What the socket transport protects (AgentOptions::dataProtection, never kAuto);
// INVALID_ARGUMENT for a KVX_DATA_PROTECTION that names no protection.
Result<DataProtection> dataProtectionFor(DataProtection chosen, bool remotePeers) {
  const DataProtection automatic =
      remotePeers ? DataProtection::kEncrypted : DataProtection::kHeaders;
  if (chosen != DataProtection::kAuto) return chosen;
  const char* fromEnvironment = std::getenv("KVX_DATA_PROTECTION");
  if (fromEnvironment == nullptr || *fromEnvironment == '\0') return automatic;
  const std::optional<DataProtection> named = parseDataProtection(fromEnvironment);
  if (!named) {
    return invalidArgument(std::string("KVX_DATA_PROTECTION='") + fromEnvironment +
                           "' is not auto, headers, authenticated or encrypted");
  }
  return *named == DataProtection::kAuto ? automatic : *named;
}

}  // namespace

Result<std::unique_ptr<Agent::Impl>> Agent::Impl::create(AgentOptions options) {
  agent::configureLogging();
  // Peers refuse metadata with any other name: refuse it here, before anything starts.
  if (Status name = agent::metadata::validateAgentName(options.name, "name"); !name.isOk()) {
    return invalidArgument("agent name '" + options.name + "' cannot be used (" + name.message() +
                           "): use letters, digits, '.', '_' and '-'");
  }
  if (Status app =
          agent::metadata::validateApplicationInfo(options.applicationInfo, "applicationInfo");
      !app.isOk()) {
    return invalidArgument("agent '" + options.name + "': " + app.message());
  }
  agent::channel::ChannelOptions channelOptions;
  channelOptions.listenAddress = options.listenAddress;
  channelOptions.connectTimeout = options.connectTimeout;
  channelOptions.readTimeout = options.controlReadTimeout;
  channelOptions.maxFrameBytes = options.maxFrameBytes;
  channelOptions.peerTimeout = options.peerTimeout;
  channelOptions.heartbeatInterval = options.heartbeatInterval;
  channelOptions.maxConnectionsPerAddress = options.maxControlConnectionsPerAddress;
  channelOptions.maxPendingHandshakes = options.maxPendingHandshakes;
  channelOptions.allowUnauthenticated = options.allowUnauthenticated;
  channelOptions.tls.enabled = options.tls.enabled;
  channelOptions.tls.certFile = options.tls.certFile;
  channelOptions.tls.keyFile = options.tls.keyFile;
  channelOptions.tls.caFile = options.tls.caFile;
  const bool tlsFilesSet =
      !options.tls.certFile.empty() || !options.tls.keyFile.empty() || !options.tls.caFile.empty();
  if (!options.tls.enabled && tlsFilesSet) {
    spdlog::warn(
        "agent '{}': TLS files are set but tls.enabled is false: no TLS on the "
        "control channel",
        options.name);
  }
  auto token = agent::channel::resolveAuthToken(options.authToken, options.authTokenFile);
  if (!token.isOk()) return token.status().withContext("agent '" + options.name + "'");
  channelOptions.authToken = std::move(token).value();
  // Before the engine starts: a bad option should not cost a UCX initialisation.
  if (Status valid = agent::channel::validateChannelOptions(channelOptions); !valid.isOk()) {
    return valid.withContext("agent '" + options.name + "'");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);

  engine::EngineOptions engineOptions;
  engineOptions.name = impl->options.name;
  engineOptions.transport = impl->options.transport;
  engineOptions.transportOptions.transports = impl->options.ucxTransports;
  engineOptions.transportOptions.connectTimeout = impl->options.connectTimeout;
  // Unauthenticated peers are local processes (the channel listens on loopback only): so are
  // the data-path peers an unauthenticated hello may name.
  engineOptions.transportOptions.loopbackPeersOnly = channelOptions.authToken.empty() &&
                                                     !impl->options.tls.enabled &&
                                                     !impl->options.allowUnauthenticated;
  const agent::NetDeviceChoice devices = agent::chooseNetDevices(
      impl->options.ucxNetDevices, engineOptions.transportOptions.loopbackPeersOnly);
  engineOptions.transportOptions.netDevices = devices.devices;
  spdlog::info(
      "agent '{}': data path devices {} ({}){}", impl->options.name,
      devices.devices.empty() ? "all" : devices.devices, devices.why,
      std::getenv("UCX_NET_DEVICES") != nullptr ? "; UCX_NET_DEVICES is set and wins" : "");
  KVX_ASSIGN_OR_RETURN(engineOptions.transportOptions.dataProtection,
                       dataProtectionFor(impl->options.dataProtection,
                                         !engineOptions.transportOptions.loopbackPeersOnly));
  engineOptions.progressMode = impl->options.progressMode;
  engineOptions.progressSpin = impl->options.progressSpin;
  engineOptions.cancelGrace = impl->options.cancelGrace;
  engineOptions.maxOpsInFlight = impl->options.maxOpsInFlight;
  engineOptions.gpuPath = impl->options.gpuPath;
  engineOptions.reopenGate.wait = [self = impl.get()](const std::string& peer,
                                                      Clock::time_point since,
                                                      const std::function<bool()>& abandon) {
    return self->awaitHeardFrom(peer, since, abandon);
  };
  engineOptions.reopenGate.longest = impl->heardFromWait();
  auto engine = engine::Engine::create(std::move(engineOptions));
  if (!engine.isOk()) return engine.status().withContext("agent '" + impl->options.name + "'");
  impl->engine = std::move(engine).value();

  Impl* self = impl.get();
  agent::channel::ChannelHandlers handlers;
  handlers.onHello = [self](const engine::PeerMetadata& remote) { return self->onHello(remote); };
  handlers.onMetadataUpdate = [self](const engine::PeerMetadata& remote) {
    self->onMetadataUpdate(remote);
  };
  handlers.onPeerDisconnected = [self](const std::string& peer, const Status& why) {
    self->onPeerDisconnected(peer, why);
  };
  handlers.holdsPeer = [self](const engine::PeerMetadata& remote) {
    auto known = self->engine->peer(remote.name);
    return known.isOk() && (*known)->incarnation() == remote.incarnation;
  };
  handlers.onPeerStartedOver = [self](const engine::PeerMetadata& remote, const Status& why) {
    return self->onPeerStartedOver(remote, why);
  };
  auto channel = agent::channel::ControlChannel::start(channelOptions, std::move(handlers));
  if (!channel.isOk()) return channel.status().withContext("agent '" + impl->options.name + "'");
  impl->channel = std::move(channel).value();
  impl->engine->setDataPathFailureHandler(
      [self](const std::string& peer, const Status& why) { self->onDataPathFailed(peer, why); });

  spdlog::info(
      "agent '{}' up: control {}, transport {}, progress {}", impl->options.name,
      impl->channel->listenAddress().empty() ? "not listening" : impl->channel->listenAddress(),
      impl->engine->transport().name(),
      impl->options.progressMode == ProgressMode::kThread ? "thread" : "caller");
  return impl;
}

Agent::Impl::~Impl() {
  if (engine) engine->setDataPathFailureHandler(nullptr);
  {
    sync::MutexLock lock(channelUseMutex);
    channelRetired = true;
  }
  // The channel goes first: no handler may reach the engine while it shuts down.
  if (channel) channel->stop();
  channel.reset();
  engine.reset();
}

engine::PeerMetadata Agent::Impl::localMetadata() const {
  engine::PeerMetadata local = engine->localMetadata();
  local.applicationInfo = options.applicationInfo;
  return local;
}

void Agent::Impl::publishMetadata() {
  Status s = channel->broadcastMetadata(localMetadata());
  if (!s.isOk())
    spdlog::warn("agent '{}': metadata update not sent: {}", options.name, s.toString());
}

Result<engine::PeerMetadata> Agent::Impl::onHello(const engine::PeerMetadata& remote) {
  Status added = engine->addOrUpdatePeer(remote);
  if (!added.isOk()) {
    spdlog::warn("agent '{}': refused peer '{}': {}", options.name, remote.name, added.toString());
    return added;
  }
  spdlog::info("agent '{}': peer '{}' connected ({} regions)", options.name, remote.name,
               remote.regions.size());
  return localMetadata();
}

Status Agent::Impl::onPeerStartedOver(const engine::PeerMetadata& remote, const Status& why) {
  // The peer leaves (its transfers fail with `why`, a departure event goes out) and joins
  // again: whoever watches peer events sees the old session end before the new one starts.
  (void)engine->removePeer(remote.name, why);
  Status added = engine->addOrUpdatePeer(remote);
  if (!added.isOk()) {
    spdlog::warn("agent '{}': peer '{}' started over and was refused: {}", options.name,
                 remote.name, added.toString());
  }
  return added;
}

void Agent::Impl::onMetadataUpdate(const engine::PeerMetadata& remote) {
  Status s = engine->updatePeer(remote);
  if (!s.isOk()) {
    spdlog::warn("agent '{}': metadata update from '{}' refused: {}", options.name, remote.name,
                 s.toString());
  }
}

void Agent::Impl::onPeerDisconnected(const std::string& peer, const Status& why) {
  spdlog::info("agent '{}': control link to '{}' closed: {}", options.name, peer, why.toString());
  // The control link is the peer's lifeline: without it no metadata or liveness reaches us,
  // so its transfers fail now rather than at their deadlines.
  Status failure = why.code() == StatusCode::kCancelled
                       ? peerFailed("peer '" + peer + "' disconnected: " + why.message())
                   : why.code() == StatusCode::kPeerFailed
                       ? peerFailed("control link to '" + peer + "' lost: " + why.message())
                       : peerFailed("control link to '" + peer + "' lost: " + why.toString());
  engine->removePeer(peer, failure).ignore();
}

bool Agent::Impl::awaitHeardFrom(const std::string& peer, Clock::time_point since,
                                 const std::function<bool()>& abandon) {
  constexpr auto kPoll = std::chrono::milliseconds(10);
  const Deadline deadline = since + heardFromWait();
  while (!abandon() && Clock::now() < deadline) {
    {
      sync::MutexLock lock(channelUseMutex);
      if (channelRetired || !channel) return false;
      const Result<Clock::time_point> heard = channel->lastHeardFrom(peer);
      if (heard.isOk() && *heard > since) return true;
    }
    std::this_thread::sleep_for(kPoll);
  }
  return false;
}

void Agent::Impl::onDataPathFailed(const std::string& peer, const Status& why) {
  // The engine has just removed the peer. Only links made before that go: one the peer
  // made since (its reconnect) carries a new handshake and stays.
  const Clock::time_point removed = Clock::now();
  sync::MutexLock lock(channelUseMutex);
  if (channelRetired || !channel) return;
  spdlog::warn("agent '{}': closing the control link to '{}': {}", options.name, peer,
               why.message());
  const Status closed = channel->disconnectOlderThan(peer, removed);
  if (!closed.isOk() && closed.code() != StatusCode::kNotFound) {
    spdlog::warn("agent '{}': closing the control link to '{}': {}", options.name, peer,
                 closed.toString());
  }
}

}  // namespace kvx
