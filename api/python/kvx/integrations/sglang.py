"""kvx as SGLang's KV transfer backend for prefill/decode disaggregation: a KV manager, sender
and receiver with SGLang's poll states (KVPoll), after sglang.srt.disaggregation.base.conn.

How it moves KV (push, as SGLang's other backends do):
  - each side's manager registers its KV buffers (KVArgs.kv_data_ptrs/lens/item_lens: one
    buffer per layer and K/V, one item per page) and its aux buffers (aux_data_ptrs/lens/
    item_lens: per-request metadata, one item per request slot) with a kvx agent; a prefill
    manager's kvx control channel listens on the bootstrap address, so the bootstrap is kvx's
    own handshake (KvxBootstrapServer holds nothing);
  - a decode receiver connects to that address (init) and sends the pages it allocated for
    the request, as runs of consecutive pages, and its aux slot (send_metadata);
  - the prefill sender, once that arrived (poll: WaitingForInput), writes each chunk of pages
    it is given (send) into those pages of every buffer, one descriptor per run of pages
    consecutive on both sides (with page size 1, a page is a token), the last chunk with the
    request's aux item; each chunk's notification counts its pages, and the receiver's poll
    says Success once every page and the aux item arrived;
  - abort() on the prefill side cancels what is in flight, then tells the receiver (Failed);
    abort() on the decode side asks the prefill to cancel and returns once it answered that
    nothing more will land (or, after abort_timeout without an answer, once the link to it
    was dropped, which stops its writes where the decode's side places every byte: tcp,
    RDMA): SGLang reuses the pages right after;
  - a peer that dies makes the other side's poll say Failed; a receiver that waited
    transfer_timeout for its pages aborts as above and says Failed;
  - where the prefill's process copies into the decode's pages itself (shared memory), a
    dropped link does not stop a copy that process is in the middle of (it may be stopped,
    and resume): a receiver whose prefill left or timed out without answering says Failed
    only once that process has ended (peer_process.py), and until then Transferring. abort()
    cannot wait for that (SGLang reuses the pages when it returns): it logs a warning.
Not yet: tensor parallelism that differs between prefill and decode; state buffers (Mamba,
SWA: a send_metadata with state_indices fails with kvx.InvalidArgument).
Memory kind: KVArgs.kv_memory_kind ("cuda" when absent, as SGLang's pools are GPU memory; its
device is KVArgs.gpu_id); aux buffers are host memory, as SGLang's metadata buffers are.
"""
import json
import threading
import time

import numpy as np

import kvx
from kvx.integrations.peer_process import PeerWriters, with_this_process
from kvx.integrations.sglang_receiver import KvxKVReceiver
from kvx.integrations.sglang_runs import expand as _expand, runs as _runs  # noqa: F401 (tests)
from kvx.integrations.sglang_sender import KvxKVSender
from kvx.integrations.sglang_states import KVPoll

__all__ = ["KVPoll", "KvxBootstrapServer", "KvxKVManager", "KvxKVReceiver", "KvxKVSender",
           "_expand", "_runs"]

PREFIX = "kvx-sgl:"
_EARLY_SECONDS = 60.0  # how long a message for a room not opened here is kept


class _Buffers:
    """One kind of buffer (KV or aux) of one side: region ids, item lengths, items each."""

    def __init__(self, regions, item_lens, lengths):
        self.regions = list(regions)
        self.item_lens = list(item_lens)
        self.items = [length // item for length, item in zip(lengths, self.item_lens)]

    def rows(self, starts, counts):
        """uint64 rows (region, offset, length): for every buffer, the runs of items at
        `starts` of `counts` items each."""
        starts = np.asarray(starts, dtype=np.uint64)
        counts = np.asarray(counts, dtype=np.uint64)
        parts = [np.stack([np.full(starts.size, region, np.uint64), starts * item,
                           counts * item], axis=1)
                 for region, item in zip(self.regions, self.item_lens)]
        return np.concatenate(parts) if parts else np.zeros((0, 3), dtype=np.uint64)


class KvxKVManager:
    """One engine's kvx agent and KV buffers. `mode` is "prefill" or "decode";
    `bootstrap_address` is where a prefill manager listens ("host:port"). Thread-safe: every
    member runs under one lock (SGLang polls from its scheduler thread)."""

    def __init__(self, args, mode, bootstrap_address="127.0.0.1:0", data_path=None,
                 abort_timeout=5.0, transfer_timeout=300.0):
        if mode not in ("prefill", "decode"):
            raise ValueError(f"mode must be 'prefill' or 'decode', not {mode!r}")
        self.mode = mode
        self.abort_timeout = abort_timeout
        self.transfer_timeout = transfer_timeout
        kind = getattr(args, "kv_memory_kind", "cuda")
        device = getattr(args, "gpu_id", 0) if kind == "cuda" else -1
        # The process, so that a decode receiver can tell when a lost prefill copying into its
        # pages itself (shared memory) can write no more (sglang_receiver.py).
        options = {"listen_address": bootstrap_address, "application_info": with_this_process()}
        if data_path:
            options["data_path"] = data_path
        rank = getattr(args, "engine_rank", 0)
        self.agent = kvx.Agent(f"sglang-{mode}-{rank}-{id(self):x}", **options)
        self.writers = PeerWriters(self.agent)
        self.lock = threading.RLock()
        self.kv = _Buffers(
            [self.agent.register_memory((ptr, length, device), name=f"kv.{i}")
             for i, (ptr, length) in enumerate(zip(args.kv_data_ptrs, args.kv_data_lens))],
            args.kv_item_lens, args.kv_data_lens)
        aux_ptrs = list(getattr(args, "aux_data_ptrs", None) or [])
        aux_lens = list(getattr(args, "aux_data_lens", None) or [])
        self.aux = _Buffers(
            [self.agent.register_memory((ptr, length, -1), name=f"aux.{i}")
             for i, (ptr, length) in enumerate(zip(aux_ptrs, aux_lens))],
            list(getattr(args, "aux_item_lens", None) or []), aux_lens)
        self._peers = {}       # bootstrap address -> peer name
        self._remote = {}      # peer name -> (its KV _Buffers, its aux _Buffers)
        self._rooms = {}       # room -> the sender or receiver of it here
        self._early = {}       # room -> ([(kind, peer, body)], kept until)

    @property
    def bootstrap_address(self):
        return self.agent.listen_address

    def register_to_bootstrap(self):
        return  # the prefill's kvx control channel is the bootstrap

    def connect(self, address):
        with self.lock:
            peer = self._peers.get(address)
            if peer is None or peer not in self.agent.peers():
                peer = self.agent.connect(address, timeout=10)
                self._peers[address] = peer
                self._remote.pop(peer, None)
            return peer

    def remote(self, peer):
        """`peer`'s KV and aux buffers (_Buffers), checked against this side's."""
        with self.lock:
            known = self._remote.get(peer)
            if known is not None:
                return known
            regions = self.agent.peer_regions(peer)
            sides = []
            for prefix, mine in (("kv", self.kv), ("aux", self.aux)):
                names = [f"{prefix}.{i}" for i in range(len(mine.regions))]
                missing = [n for n in names if n not in regions]
                if missing or f"{prefix}.{len(names)}" in regions:
                    raise kvx.NotFound(f"{peer} does not expose the {len(names)} {prefix} "
                                       "buffers this engine has")
                sides.append(_Buffers([regions[n]["id"] for n in names], mine.item_lens,
                                      [regions[n]["length"] for n in names]))
            self._remote[peer] = tuple(sides)
            return self._remote[peer]

    def note(self, kind, room, body=None):
        """A message for `room`'s other side: see sglang_sender.py for the kinds."""
        return PREFIX + json.dumps({"kind": kind, "room": room, "body": body})

    def send_note(self, peer, kind, room, body=None):
        self.agent.send_notification(peer, self.note(kind, room, body))

    # ---- rooms ----
    def attach(self, room, party):
        """`party` (sender or receiver) handles `room`'s messages from now on; those that came
        before are handed over."""
        with self.lock:
            self._rooms[room] = party
            for kind, peer, body in self._early.pop(room, ([], None))[0]:
                party.on_message(kind, peer, body)

    def detach(self, room, party):
        with self.lock:
            if self._rooms.get(room) is party:
                del self._rooms[room]

    def pump(self):
        """Hands the notifications received to their rooms."""
        with self.lock:
            now = time.monotonic()
            for room in [r for r, (_, until) in self._early.items() if until <= now]:
                del self._early[room]
            for peer, raw in self.agent.take_notifications():
                text = raw.decode(errors="replace")
                if not text.startswith(PREFIX):
                    continue
                try:
                    message = json.loads(text[len(PREFIX):])
                    kind, room, body = message["kind"], message["room"], message.get("body")
                except (ValueError, KeyError, TypeError):
                    continue
                if kind == "abort" and self.mode == "prefill":
                    self._abort_from_decode(peer, room)
                    continue
                party = self._rooms.get(room)
                if party is not None:
                    party.on_message(kind, peer, body)
                else:
                    entries, _ = self._early.get(room, ([], None))
                    self._early[room] = (entries + [(kind, peer, body)], now + _EARLY_SECONDS)

    def _abort_from_decode(self, peer, room):
        """The decode gave up on `room`: nothing lands after the `aborted` answer."""
        party = self._rooms.get(room)
        if party is not None:
            party.on_message("abort", peer, None)  # cancels what it has in flight
        else:  # not opened here yet: a sender opened later fails at once
            self._early[room] = ([("abort", peer, None)], time.monotonic() + _EARLY_SECONDS)
        try:
            self.send_note(peer, "aborted", room)
        except kvx.Error:
            pass  # the decode is gone

    def alive(self, peer):
        return peer in self.agent.peers()

    def close(self):
        self.agent.close()


class KvxBootstrapServer:
    """SGLang starts one on the prefill side; kvx's control channel does its work."""

    def __init__(self, host=None, port=None):
        self.host, self.port = host, port
