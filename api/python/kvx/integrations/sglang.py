"""kvx as SGLang's KV transfer backend for prefill/decode disaggregation: a KV manager, sender
and receiver with SGLang's poll states (KVPoll), after sglang.srt.disaggregation.base.conn.

How it moves KV (push, as SGLang's other backends do):
  - each side's manager registers its KV buffers (KVArgs.kv_data_ptrs/lens/item_lens: one
    buffer per layer and K/V, one item per page) with a kvx agent and prepares one list of
    every (buffer, page) once; a prefill manager's kvx control channel listens on the
    bootstrap address, so the bootstrap is kvx's own handshake (KvxBootstrapServer holds
    nothing);
  - a decode receiver connects to that address (init), then sends the pages it allocated for
    the request as a kvx notification (send_metadata; indices coalesced into runs);
  - the prefill sender, once that arrived (poll: WaitingForInput), writes each chunk of pages
    it is given (send) into those pages of every buffer, in one transfer per chunk from the
    prepared lists; the last chunk's transfer carries the notification that tells the
    receiver every byte is in place (poll: Success);
  - abort() on either side cancels what is in flight and tells the other side, whose poll
    says Failed; a peer that dies makes the other side's poll say Failed.
Not yet: tensor parallelism that differs between prefill and decode, aux and state buffers.
Memory kind: KVArgs.kv_memory_kind ("cuda" when absent, as SGLang's pools are GPU memory; its
device is KVArgs.gpu_id).
"""
import json
import threading

import numpy as np

import kvx


class KVPoll:
    Failed = 0
    Bootstrapping = 1
    WaitingForInput = 2
    Transferring = 3
    Success = 4


PREFIX = "kvx-sgl:"


def _runs(indices):
    """[[start, length], ...] of sorted-or-not page indices, consecutive ones merged."""
    indices = np.asarray(indices, dtype=np.int64)
    if indices.size == 0:
        return []
    breaks = np.nonzero(np.diff(indices) != 1)[0] + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [indices.size]])
    return [[int(indices[s]), int(e - s)] for s, e in zip(starts, ends)]


def _expand(runs):
    if not runs:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate([np.arange(s, s + n, dtype=np.int64) for s, n in runs])


class KvxKVManager:
    """One engine's kvx agent and KV buffers. `mode` is "prefill" or "decode";
    `bootstrap_address` is where a prefill manager listens ("host:port")."""

    def __init__(self, args, mode, bootstrap_address="127.0.0.1:0", data_path=None):
        if mode not in ("prefill", "decode"):
            raise ValueError(f"mode must be 'prefill' or 'decode', not {mode!r}")
        self.mode = mode
        kind = getattr(args, "kv_memory_kind", "cuda")
        device = getattr(args, "gpu_id", 0) if kind == "cuda" else -1
        options = {"listen_address": bootstrap_address}
        if data_path:
            options["data_path"] = data_path
        rank = getattr(args, "engine_rank", 0)
        self.agent = kvx.Agent(f"sglang-{mode}-{rank}-{id(self):x}", **options)
        self.item_lens = list(args.kv_item_lens)
        self.pages = [length // item for length, item in zip(args.kv_data_lens, self.item_lens)]
        self.regions = [self.agent.register_memory((ptr, length, device), name=f"kv.{i}")
                        for i, (ptr, length) in enumerate(zip(args.kv_data_ptrs,
                                                              args.kv_data_lens))]
        self.local_list = self.agent.prepare_local_list(self._rows(self.regions, self.pages))
        self._lock = threading.Lock()
        self._peers = {}       # address or peer name -> peer name
        self._remote = {}      # peer name -> (remote list, its pages per buffer)
        self._inbox = {}       # (kind, room) -> (peer, payload)

    @property
    def bootstrap_address(self):
        return self.agent.listen_address

    def register_to_bootstrap(self):
        return  # the prefill's kvx control channel is the bootstrap

    def _rows(self, regions, pages):
        rows = [np.stack([np.full(n, r, np.uint64), np.arange(n, dtype=np.uint64) * item,
                          np.full(n, item, np.uint64)], axis=1)
                for r, n, item in zip(regions, pages, self.item_lens)]
        return np.concatenate(rows)

    def indices(self, pages, pages_per_buffer):
        """List indices of `pages` in every buffer, buffer-major."""
        pages = np.asarray(pages, dtype=np.uint32)
        offsets = np.concatenate([[0], np.cumsum(pages_per_buffer)[:-1]]).astype(np.uint32)
        return (offsets[:, None] + pages[None, :]).reshape(-1).astype(np.uint32)

    def connect(self, address):
        with self._lock:
            peer = self._peers.get(address)
        if peer is None or peer not in self.agent.peers():
            peer = self.agent.connect(address, timeout=10)
            with self._lock:
                self._peers[address] = peer
        return peer

    def remote(self, peer):
        """The remote list of `peer`'s buffers (prepared once)."""
        with self._lock:
            known = self._remote.get(peer)
        if known is not None:
            return known
        regions = self.agent.peer_regions(peer)
        names = [f"kv.{i}" for i in range(len(self.regions))]
        if any(n not in regions for n in names):
            raise kvx.NotFound(f"{peer} does not expose the {len(names)} KV buffers this "
                               "engine has")
        pages = [regions[n]["length"] // item for n, item in zip(names, self.item_lens)]
        remote_list = self.agent.prepare_remote_list(
            peer, self._rows([regions[n]["id"] for n in names], pages))
        with self._lock:
            self._remote[peer] = (remote_list, pages)
        return self._remote[peer]

    def send_note(self, peer, kind, room, body=None):
        payload = {"kind": kind, "room": room, "body": body}
        self.agent.send_notification(peer, PREFIX + json.dumps(payload))

    def take(self, kind, room):
        """The (peer, body) of a message of `kind` for `room`, if one came."""
        with self._lock:
            for _, raw in self.agent.take_notifications():
                text = raw.decode(errors="replace")
                if text.startswith(PREFIX):
                    message = json.loads(text[len(PREFIX):])
                    self._inbox[(message["kind"], message["room"])] = (None, message["body"])
            return self._inbox.pop((kind, room), None)

    def alive(self, peer):
        return peer in self.agent.peers()

    def close(self):
        self.agent.close()


class KvxBootstrapServer:
    """SGLang starts one on the prefill side; kvx's control channel does its work."""

    def __init__(self, host=None, port=None):
        self.host, self.port = host, port


class KvxKVSender:
    """The prefill side of one request (`bootstrap_room`)."""

    def __init__(self, mgr, bootstrap_addr, bootstrap_room, dest_tp_ranks=None, pp_rank=0):
        self.mgr, self.room = mgr, bootstrap_room
        self.peer = None
        self.dst_pages = None
        self.total = None
        self.sent = 0
        self.transfers = []
        self.error = None
        self.finished = False

    def init(self, num_kv_indices, aux_index=None):
        self.total = int(num_kv_indices)

    def _arrived(self):
        if self.dst_pages is None and self.error is None:
            got = self.mgr.take("meta", self.room)
            if got is not None:
                body = got[1]
                self.peer = body["peer"]
                self.dst_pages = _expand(body["runs"])
        return self.dst_pages is not None

    def send(self, kv_indices, state_indices=None, token_position_offset=0):
        if not self._arrived():
            raise kvx.FailedPrecondition(f"room {self.room}: no decode metadata yet (poll() "
                                         "says WaitingForInput once it came)")
        pages = np.asarray(kv_indices, dtype=np.int64)
        dst = self.dst_pages[self.sent:self.sent + pages.size]
        if dst.size != pages.size:
            raise kvx.InvalidArgument(f"room {self.room}: {self.sent + pages.size} pages sent, "
                                      f"the decode side allocated {self.dst_pages.size}")
        self.sent += pages.size
        last = self.total is None or self.sent >= self.total
        try:
            remote_list, remote_pages = self.mgr.remote(self.peer)
            note = PREFIX + json.dumps({"kind": "done", "room": self.room, "body": None}) \
                if last else None
            transfer = self.mgr.agent.make_transfer(
                kvx.WRITE, self.mgr.local_list, self.mgr.indices(pages, self.mgr.pages),
                remote_list, self.mgr.indices(dst, remote_pages), notification=note)
            self.mgr.agent.post(transfer)
            self.transfers.append(transfer)
            self.finished = last
        except kvx.Error as error:
            self.error = error

    def poll(self):
        if self.error is None and self.mgr.take("abort", self.room) is not None:
            self.error = kvx.Cancelled(f"room {self.room}: the decode side aborted")
        if self.error is not None:
            return KVPoll.Failed
        if not self._arrived():
            return KVPoll.Failed if self.error is not None else KVPoll.Bootstrapping
        if not self.transfers and not self.finished:
            return KVPoll.WaitingForInput
        states = [self.mgr.agent.poll(t) for t in self.transfers]
        for state, why in states:
            if state == "failed":
                self.error = kvx.PeerFailed(f"room {self.room}: {why}")
                return KVPoll.Failed
        if self.finished and all(state == "done" for state, _ in states):
            return KVPoll.Success
        return KVPoll.Transferring

    def failure_exception(self):
        raise self.error or kvx.InternalError(f"room {self.room} did not fail")

    def abort(self):
        for t in self.transfers:
            try:
                self.mgr.agent.cancel(t)
            except kvx.Error:
                pass
        if self.peer is not None:
            try:
                self.mgr.send_note(self.peer, "abort", self.room)
            except kvx.Error:
                pass
        self.error = self.error or kvx.Cancelled(f"room {self.room}: aborted")

    def clear(self):
        for t in self.transfers:
            try:
                self.mgr.agent.release(t)
            except kvx.Error:
                pass
        self.transfers = []


class KvxKVReceiver:
    """The decode side of one request: the prefill at `bootstrap_addr`, room
    `bootstrap_room`."""

    def __init__(self, mgr, bootstrap_addr, bootstrap_room=None):
        self.mgr, self.address, self.room = mgr, bootstrap_addr, bootstrap_room
        self.peer = None
        self.state = KVPoll.Bootstrapping
        self.error = None

    def init(self, prefill_dp_rank=0):
        try:
            self.peer = self.mgr.connect(self.address)
            self.mgr.remote(self.peer)  # the prefill exposes matching buffers
            self.state = KVPoll.WaitingForInput
        except kvx.Error as error:
            self.error, self.state = error, KVPoll.Failed

    def send_metadata(self, kv_indices, aux_index=None, state_indices=None,
                      decode_prefix_len=None):
        if self.state != KVPoll.WaitingForInput:
            raise kvx.FailedPrecondition(f"room {self.room}: send_metadata after init() only")
        try:
            self.mgr.send_note(self.peer, "meta", self.room,
                               {"peer": self.mgr.agent.name, "runs": _runs(kv_indices)})
            self.state = KVPoll.Transferring
        except kvx.Error as error:
            self.error, self.state = error, KVPoll.Failed

    def poll(self):
        if self.state == KVPoll.Transferring:
            if self.mgr.take("done", self.room) is not None:
                self.state = KVPoll.Success
            elif self.mgr.take("abort", self.room) is not None:
                self.error = kvx.Cancelled(f"room {self.room}: the prefill side aborted")
                self.state = KVPoll.Failed
            elif not self.mgr.alive(self.peer):
                self.error = kvx.PeerFailed(f"room {self.room}: the prefill {self.peer} is gone")
                self.state = KVPoll.Failed
        return self.state

    def failure_exception(self):
        raise self.error or kvx.InternalError(f"room {self.room} did not fail")

    def abort(self):
        if self.peer is not None and self.state in (KVPoll.WaitingForInput,
                                                    KVPoll.Transferring):
            try:
                self.mgr.send_note(self.peer, "abort", self.room)
            except kvx.Error:
                pass
        self.error = self.error or kvx.Cancelled(f"room {self.room}: aborted")
        self.state = KVPoll.Failed

    def clear(self):
        return
