"""The process of a peer worker, and whether it has ended: for a decode worker that must know
when a lost prefill worker copying into its KV cache itself (over shared memory) can write no
more. Its identity is exchanged in the agents' handshake (Agent(application_info=...)).

A pid names the same process only inside one pid namespace of one boot of one host, so the
identity carries a key of those; a peer whose key differs from ours cannot be watched. The
watch is a pidfd opened while the peer is known to be alive (when its writes are asked for),
so a pid the kernel hands to another process later is never mistaken for it."""
import dataclasses
import json
import os
import select

import kvx

_KEY = "kvx_process"


def _host_key():
    """This boot and pid namespace ("<boot id>/pid:<inode>"), or "" where /proc cannot say."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip()
        return f"{boot}/pid:{os.stat('/proc/self/ns/pid').st_ino}"
    except OSError:
        return ""


def with_this_process(application_info=""):
    """`application_info` (a JSON object, or empty) with this process's identity added."""
    info = json.loads(application_info) if application_info else {}
    info[_KEY] = {"pid": os.getpid(), "host": _host_key()}
    return json.dumps(info)


class ProcessWatch:
    """Whether a peer's process has ended. Thread: one at a time."""

    def __init__(self, pidfd, description):
        self._pidfd = pidfd
        self._ended = pidfd is None
        self.description = description

    @staticmethod
    def of(application_info):
        """A watch on the process `application_info` names, or None (and why not) where it
        cannot be watched: another host or pid namespace, or no identity given."""
        try:
            identity = json.loads(application_info or "{}").get(_KEY) or {}
        except (ValueError, AttributeError):
            identity = {}
        pid, host = identity.get("pid"), identity.get("host")
        if not pid or not host:
            return None, "it did not say which process it is"
        if host != _host_key():
            return None, "its process is on another host or in another pid namespace"
        try:
            return ProcessWatch(os.pidfd_open(pid), f"pid {pid}"), ""
        except ProcessLookupError:
            return ProcessWatch(None, f"pid {pid}, which has ended"), ""
        except (OSError, AttributeError) as error:  # AttributeError: a Python without pidfds
            return None, f"its process cannot be watched: {error}"

    def ended(self):
        if not self._ended:
            poller = select.poll()
            poller.register(self._pidfd, select.POLLIN)
            self._ended = bool(poller.poll(0))  # a pidfd is readable once its process exits
            if self._ended:
                os.close(self._pidfd)
        return self._ended

    def __del__(self):
        if not self._ended and self._pidfd is not None:
            os.close(self._pidfd)


@dataclasses.dataclass
class Writer:
    """How a peer's writes reach this agent's memory, learnt while it is linked."""
    incarnation: int
    direct: bool                 # its process copies into our memory itself (shared memory)
    watch: ProcessWatch = None   # where `direct`: whether that process has ended (None: unknown)
    unwatched: str = ""          # why there is no watch

    def stopped(self):
        """Whether no byte of its writes can land any more without its own answer."""
        return not self.direct or (self.watch is not None and self.watch.ended())

    def describe(self):
        return self.watch.description if self.watch is not None else self.unwatched


class PeerWriters:
    """Writer records of an agent's peers, by name (the latest incarnation of each).
    Thread: one at a time."""

    def __init__(self, agent):
        self._agent = agent
        self._writers = {}

    def of(self, peer):
        """How `peer` (linked now) writes here. Not knowing counts as writing directly."""
        try:
            info = self._agent.peer_info(peer)
        except kvx.Error:
            return Writer(0, True, None, "it left before its writes were asked for")
        known = self._writers.get(peer)
        if known is not None and known.incarnation == info["incarnation"]:
            return known
        try:
            direct = self._agent.peer_writes_directly(peer)
        except kvx.Error:
            direct = True
        writer = Writer(info["incarnation"], direct)
        if direct:
            writer.watch, writer.unwatched = ProcessWatch.of(info["application_info"])
        self._writers[peer] = writer
        return writer
