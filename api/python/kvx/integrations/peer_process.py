"""The process of a peer worker, and whether it has ended: for a decode worker that must know
when a lost prefill worker copying into its KV cache itself (over shared memory) can write no
more. Its identity is exchanged in the agents' handshake (Agent(application_info=...)).

A pid names the same process only inside one pid namespace of one boot of one host, so the
identity carries a key of those; a peer whose key differs from ours cannot be watched. The
watch is a pidfd opened while the peer is known to be alive (when its writes are asked for),
so a pid the kernel hands to another process later is never mistaken for it."""
import dataclasses
import json

import kvx
from kvx import _kvx

_KEY = "kvx_process"


def with_this_process(application_info=""):
    """`application_info` (a JSON object, or empty) with this process's identity added."""
    info = json.loads(application_info) if application_info else {}
    info[_KEY] = _kvx.this_process()
    return json.dumps(info)


class ProcessWatch:
    """Whether a peer's process has ended (kvx's ProcessWatch). Thread: one at a time."""

    def __init__(self, native, description):
        self._native = native  # None: known to have ended
        self.description = description

    @staticmethod
    def of(application_info):
        """A watch on the process `application_info` names, or None (and why not) where it
        cannot be watched: another host or pid namespace, or no identity given."""
        try:
            info = json.loads(application_info or "{}")
        except ValueError:
            info = {}
        identity = info.get(_KEY) if isinstance(info, dict) else None
        if not isinstance(identity, dict):
            identity = {}
        pid, host = identity.get("pid"), identity.get("host")
        if type(pid) is not int or not 0 < pid < 2**63 or type(host) is not str or not host:
            return None, "it did not say which process it is"
        try:
            return ProcessWatch(_kvx.watch_process(pid, host), f"pid {pid}"), ""
        except kvx.NotFound:
            return ProcessWatch(None, f"pid {pid}, which has ended"), ""
        except (kvx.FailedPrecondition, kvx.Unimplemented) as error:
            return None, f"its process cannot be watched: {error}"

    def ended(self):
        return self._native is None or self._native.ended()


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
