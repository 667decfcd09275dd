"""A vLLM worker's kvx links to the other instance's workers: connects that never stall an
engine step, the peers' KV regions, and the descriptor lists made over them (vllm.py)."""
import threading

import kvx


class PeerLinks:
    """Peers by address (connected from here) or by name (connected to here), and prepared
    lists over this worker's KV cache and theirs. Thread: the worker's, except the
    connects, which run on threads of their own and touch only the guarded `_peers`."""

    def __init__(self, agent, layout, regions, connect_timeout):
        self._agent = agent
        self._layout = layout
        self._regions = regions        # this worker's region ids, in layer order
        self._connect_timeout = connect_timeout
        self._peers = {}               # address -> peer name, or the error of its connect
        self._connecting = set()       # addresses being connected to in the background
        self._lists = {}               # (peer or None, first head, count, per token) -> list
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

    def local_list(self, first_head, count, per_token):
        """A list over this worker's cache (see KvLayout.ranges)."""
        key = (None, first_head, count, per_token)
        if key not in self._lists:
            rows = self._layout.ranges(self._regions, first_head=first_head, head_count=count,
                                       per_token=per_token)
            self._lists[key] = (self._agent.prepare_local_list(rows), self._layout.num_blocks)
        return self._lists[key][0]

    def remote_list(self, peer, first_head, count, per_token, peer_heads):
        """(a list over `peer`'s cache, its number of blocks): the peer has `peer_heads` heads
        a token and the same layers, block size and head size (checked at the handshake)."""
        key = (peer, first_head, count, per_token)
        if key not in self._lists:
            regions = self._agent.peer_regions(peer)
            names = [f"kv.{name}" for name in self._layout.names]
            missing = [n for n in names if n not in regions]
            if missing:
                raise kvx.NotFound(f"the worker {peer} has no KV region {missing[0]}")
            length = regions[names[0]]["length"]
            num_blocks = length // (2 * self._layout.block_size * peer_heads *
                                    self._layout.head_bytes)
            rows = self._layout.ranges([regions[n]["id"] for n in names], num_blocks=num_blocks,
                                       heads=peer_heads, first_head=first_head, head_count=count,
                                       per_token=per_token)
            self._lists[key] = (self._agent.prepare_remote_list(peer, rows), num_blocks)
        return self._lists[key]
