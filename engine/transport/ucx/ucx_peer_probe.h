#pragma once

// UcxPeerProbe: has UCX check what a peer sends for it (its worker address, its packed
// remote keys) where a failure costs nothing.
//
// ucp_ep_create reads a worker address, and ucp_ep_rkey_unpack a packed key, without a length
// and trusts them: a crafted address (0x02 and 40 zero bytes will do, or none at all) fails an
// assertion inside UCX and aborts the process, or makes UCX read past the bytes it was given.
// kvx cannot check these blobs the way UCX reads them: their layout changes between UCX
// releases (1.13 and 1.22 differ) and depends on the transports loaded. So before this
// process's UCX sees a peer's blobs, a probe process ("kvx-ucx-probe", built and installed
// with kvx) makes a worker with the same transport settings, creates an endpoint to the
// address (without error handling, and closes it unannounced: UCX sends the peer nothing),
// unpacks each key on an endpoint to its own worker (on one to the peer, UCX 1.13 wired up
// with the peer, which then failed to attach to the vanished probe) and exits. The probe and
// this process both hand UCX each blob followed by zeros (paddedForUcx, ucx_frame.h), so that
// a blob shorter than what UCX reads reads the same bytes in both. Blobs the probe survived
// go on to UCX here; a
// blob that made it crash, fail or hang is refused with the reason. Good verdicts are
// remembered for the life of this object, so that a peer's reconnects and repeated keys cost
// nothing; a probe costs a process start and a UCX initialisation (about 10 ms here) per peer
// or batch of new keys.
//
// The probe's endpoint may start a connection to the peer (tcp) or map its segments (shared
// memory), and is closed at once: the peer sees at most a short-lived connection.
//
// Thread safety: check() may be called from any thread; probes may run at once.

#include <cstdint>
#include <set>
#include <span>
#include <string>

#include "engine/transport/transport.h"
#include "kvx/status.h"
#include "sync/mutex.h"

namespace kvx::engine::ucx {

// Where the probe is: $KVX_UCX_PROBE, else beside the object file this code is in (the kvx
// executable, or libkvx.so), else the build tree's, else the installed one
// (libexec/kvx/kvx-ucx-probe); FAILED_PRECONDITION naming the places looked at.
Result<std::string> ucxProbePath();

class UcxPeerProbe {
 public:
  explicit UcxPeerProbe(const TransportOptions& options);

  // OK when a probe with this process's transport settings created an endpoint to
  // `framedAddress` (a peer transport address, in the frame of ucx_frame.h), unpacked each
  // of `keys` on it (packed as ucx_remote_key.h packs them) and exited cleanly.
  // INVALID_ARGUMENT with the probe's reason otherwise ("... made UCX crash (signal 6) ..."),
  // naming the key when a key was the cause; TIMED_OUT when the probe did not finish within
  // its deadline (10 s); FAILED_PRECONDITION when there is no probe to run.
  Status check(std::span<const std::uint8_t> framedAddress, std::span<const PeerKey> keys = {});

  // Probe processes started so far (cached verdicts start none).
  std::uint64_t probesRun() const;

 private:
  const std::string transports_;
  const std::string netDevices_;
  mutable sync::Mutex mutex_;
  // "A" + address, "K" + kind + address + key, for blobs that passed.
  std::set<std::string> accepted_ KVX_GUARDED_BY(mutex_);
  std::uint64_t probesRun_ KVX_GUARDED_BY(mutex_) = 0;
};

}  // namespace kvx::engine::ucx
