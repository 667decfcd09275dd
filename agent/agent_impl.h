#pragma once

// Agent::Impl: the data plane (engine) joined to the control plane (channel). The channel
// hands peer metadata to the engine; local region changes go out to peers as updates.
//
// Threads: the engine's progress thread, the channel's thread, and callers' threads. The
// channel's handlers only call the engine (never the channel back).

#include <memory>

#include "agent/channel/control_channel.h"
#include "engine/engine.h"
#include "kvx/agent.h"
#include "sync/mutex.h"

namespace kvx {

struct Agent::Impl {
  static Result<std::unique_ptr<Impl>> create(AgentOptions options);
  ~Impl();

  // The engine's metadata (its regions, data-path address) plus what the control plane
  // adds (AgentOptions::applicationInfo): what peers are told, by handshake or blob.
  engine::PeerMetadata localMetadata() const;
  // Sends the current metadata to every connected peer (after a region change).
  void publishMetadata();

  Result<engine::PeerMetadata> onHello(const engine::PeerMetadata& remote);
  void onMetadataUpdate(const engine::PeerMetadata& remote);
  // The channel found that `remote` started over without us (or we without it): the engine
  // forgets the peer (its transfers fail with `why`; kLeft) and takes it anew (kJoined).
  Status onPeerStartedOver(const engine::PeerMetadata& remote, const Status& why);
  void onPeerDisconnected(const std::string& peer, const Status& why);
  // The engine removed `peer` because its data path failed: drop its control links made
  // before that too, so that both sides forget each other and a reconnect starts from a
  // fresh handshake (a link the peer made since is that reconnect, and stays).
  void onDataPathFailed(const std::string& peer, const Status& why);
  // The engine's ReopenGate: waits until a byte arrives from `peer` on its control link after
  // `since`, until `abandon()`, or for peerTimeout plus a heartbeat interval (by then a
  // silent peer has been declared failed).
  bool awaitHeardFrom(const std::string& peer, Clock::time_point since,
                      const std::function<bool()>& abandon);
  Clock::duration heardFromWait() const { return options.peerTimeout + options.heartbeatInterval; }

  AgentOptions options;
  std::unique_ptr<engine::Engine> engine;
  std::unique_ptr<agent::channel::ControlChannel> channel;
  // Held while the engine's data-path failure handler uses the channel; the destructor takes
  // it to retire the channel, so that the handler never reaches a destroyed one.
  sync::Mutex channelUseMutex;
  bool channelRetired KVX_GUARDED_BY(channelUseMutex) = false;
};

namespace agent {

// The engine behind a live Agent, for the agent layer's own code (KvPool's host copies into
// GPU memory), through Agent's friend agentImpl. REQUIRES: `agent` is alive; the engine
// lives as long as it.
engine::Engine& engineOf(Agent& agent);

}  // namespace agent
}  // namespace kvx
