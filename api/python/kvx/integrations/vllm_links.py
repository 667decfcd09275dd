"""A vLLM worker's kvx links to the other instance's workers: connects that never stall an
engine step, the peers' KV regions, and the descriptor lists made over them (vllm.py)."""
import dataclasses
import threading

import numpy as np

import kvx
from kvx.integrations import vllm_layout


@dataclasses.dataclass(frozen=True)
class ListPair:
    """A list over this worker's cache and the matching one over a peer's, with `per_block`
    entries a block: an attention block's first `used` of `length` bytes each, a Mamba
    state's first `state_used`, the `pieces` (vllm_layout.state_pieces) of it."""
    local: int
    remote: int
    per_block: int
    length: int
    used: int
    state_used: int
    pieces: tuple

    def moved_bytes(self, entries, state_entries):
        return vllm_layout.moved_bytes(entries, state_entries, self.length, self.pieces)


class PeerLinks:
    """Peers by address (connected from here) or by name (connected to here), and prepared
    lists over this worker's KV cache and theirs. Thread: the worker's, except the
    connects, which run on threads of their own and touch only the guarded `_peers`."""

    def __init__(self, agent, layout, regions, connect_timeout, tp_rank=0):
        self._agent = agent
        self._layout = layout
        self._tp_rank = tp_rank            # this worker's (a Mamba state's pieces depend on it)
        self._regions = regions        # this worker's region ids, by buffer (KvLayout.buffers)
        self._connect_timeout = connect_timeout
        self._peers = {}               # address -> peer name, or the error of its connect
        self._connecting = set()       # addresses being connected to in the background
        # (peer, its heads) -> (remote list, local key); local key -> (local list, entries a
        # block, an entry's bytes).
        self._lists = {}
        self._lock = threading.Lock()

    def _connect(self, address):
        try:
            result = self._agent.connect(address, timeout=self._connect_timeout)
        except kvx.Error as error:
            result = error
        with self._lock:
            self._peers[address] = result
            self._connecting.discard(address)

    def peer(self, address):
        """The peer at `address`; None while a connect runs in the background (started here);
        raises how the connect failed (once: the next call tries again)."""
        with self._lock:
            known = self._peers.get(address)
            if isinstance(known, kvx.Error):
                del self._peers[address]
                raise known
            if known is not None and known in self._agent.peers():
                return known
            if address in self._connecting:
                return None
            self._connecting.add(address)
            self._peers.pop(address, None)
        if known is not None:
            self.forget(known)  # a reconnected peer's lists are made again
        threading.Thread(target=self._connect, args=(address,), daemon=True,
                         name="kvx-vllm-connect").start()
        return None

    def connected(self, address):
        """The peer at `address`; kvx.PeerFailed while it is not connected."""
        peer = self.peer(address)
        if peer is None:
            raise kvx.PeerFailed(f"the worker at {address} is connecting again")
        return peer

    def ready(self, addresses):
        """True when every worker in `addresses` is connected (raises a failed connect)."""
        ready = True
        for address in addresses:
            ready = self.peer(address) is not None and ready
        return ready

    def alive(self, peer):
        return peer in self._agent.peers()

    def forget(self, peer):
        """Releases the lists made over `peer`'s memory (it left, or is connected anew)."""
        for key in [k for k in self._lists if k[0] == peer]:
            try:
                self._agent.release_list(self._lists.pop(key)[0])
            except kvx.Error:
                pass  # the peer's removal released it already

    def lists(self, peer, theirs, source, decode_is_mine):
        """The ListPair over this worker's cache and `peer`'s for `source` (vllm_heads.Source:
        the peer's rank, and the heads from `first_here` here and `first_there` there; count
        0 for none), `theirs` being the peer's cache (KvLayout.describe, checked with
        check_compatible) and `decode_is_mine` whether this worker is the decode's."""
        key = (peer, source.rank, source.first_here, source.first_there, source.count)
        if key not in self._lists:
            mine = self._layout.describe()
            if source.count:
                here, there, length = self._layout.pair(theirs, source.first_here,
                                                        source.first_there, source.count)
            else:  # no heads in common: the Mamba states alone, if any
                here = there = np.zeros(0, dtype=np.uint64)
                length = 1
            pieces = tuple(vllm_layout.state_pieces(mine, self._tp_rank, theirs, source.rank,
                                                    decode_is_mine))
            width = max(len(here), len(pieces), 1)
            local_key = (None, source.first_here, source.count, length, here.tobytes(),
                         pieces)
            if local_key not in self._lists:
                rows = vllm_layout.rows(mine, self._regions, here, length,
                                        [(at, n) for at, _, n in pieces] or [(0, None)])
                self._lists[local_key] = self._agent.prepare_local_list(rows)
            regions = self._agent.peer_regions(peer)
            names = [vllm_layout.buffer_name(i) for i in range(theirs["buffers"])]
            missing = [n for n in names if n not in regions]
            if missing:
                raise kvx.NotFound(f"the worker {peer} has no KV region {missing[0]}")
            rows = vllm_layout.rows(theirs, [regions[n]["id"] for n in names], there, length,
                                    [(at, n) for _, at, n in pieces] or [(0, None)])
            self._lists[key] = (self._agent.prepare_remote_list(peer, rows), ListPair(
                self._lists[local_key], 0, width, length, len(here), len(pieces), pieces))
        remote, shape = self._lists[key]
        return dataclasses.replace(shape, remote=remote)
