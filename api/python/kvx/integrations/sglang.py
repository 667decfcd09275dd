"""kvx as SGLang's KV transfer backend for prefill/decode disaggregation: a KV manager, sender
and receiver with SGLang's poll states (KVPoll), after sglang.srt.disaggregation.base.conn.

How it moves KV (push, as SGLang's other backends do):
  - each side's manager registers its KV buffers (KVArgs.kv_data_ptrs/lens/item_lens: one
    buffer per layer and K/V, one item per page) and its aux buffers (aux_data_ptrs/lens/
    item_lens: per-request metadata, one item per request slot) with a kvx agent; a prefill
    manager registers its agent's address with its node's bootstrap server
    (sglang_bootstrap.py, SGLang's protocol);
  - a decode receiver asks that server for its prefill rank and connects to it (init), then
    sends the pages it allocated for the request, as runs of consecutive pages, its aux slot
    and its prefix length (send_metadata);
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
Attention TP may differ between the two engines when one size divides the other: each decode
rank reads from the prefill ranks holding its heads, SGLang's rank mapping (sglang_heads.py).
State buffers (KVArgs.state_*: Mamba slots, SWA pages, ...) move with the last chunk, item by
item as SGLang's indices name them; between attention TP sizes, Mamba states alone, each
prefill rank writing its pieces of each item (sglang_state_shards.py). SGLang selects kvx
through sglang_install.py.
Memory kind: KVArgs.kv_memory_kind ("cuda" when absent, as SGLang's pools are GPU memory; its
device is KVArgs.gpu_id); aux buffers are host memory, as SGLang's metadata buffers are.
"""
import json
import os
import threading
import time
import types

import numpy as np

import kvx
from kvx.integrations import node_address, sglang_bootstrap as bootstrap, sglang_heads as heads
from kvx.integrations import sglang_state_shards as state_shards
from kvx.integrations.peer_process import PeerWriters, with_this_process
from kvx.integrations.sglang_receiver import KvxKVReceiver
from kvx.integrations.sglang_runs import expand as _expand, runs as _runs  # noqa: F401 (tests)
from kvx.integrations.sglang_sender import KvxKVSender
from kvx.integrations.sglang_upstream import BaseKVManager, KVPoll, mode_name

__all__ = ["KVPoll", "KvxKVBootstrapServer", "KvxKVManager", "KvxKVReceiver", "KvxKVSender",
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


class KvxKVManager(BaseKVManager):
    """One engine rank's kvx agent and KV buffers, built as SGLang builds a backend's manager:
    `(kv_args, DisaggregationMode.PREFILL or .DECODE, server_args, is_mla_backend)`. A prefill
    manager's agent listens on a port of its own and registers it with the node's bootstrap
    server (sglang_bootstrap.py: server_args' host and disaggregation_bootstrap_port, or
    `bootstrap_address`); a decode manager asks that server for the prefill's layout
    (try_ensure_parallel_info) and ranks. kvx's own settings: the keywords, else
    KVX_SGLANG_DATA_PATH ("shm", "tcp", "socket"), KVX_SGLANG_ABORT_TIMEOUT and SGLang's
    SGLANG_DISAGGREGATION_WAITING_TIMEOUT (the transfer timeout, 300 s). Thread-safe: every
    member runs under one lock (SGLang polls from its scheduler thread)."""

    def __init__(self, args, disaggregation_mode, server_args=None, is_mla_backend=False, *,
                 bootstrap_address=None, data_path=None, abort_timeout=None,
                 transfer_timeout=None):
        self.mode = mode_name(disaggregation_mode)
        self.kv_args = args
        self.server_args = server_args
        self.is_mla_backend = bool(is_mla_backend)
        self.is_dummy_cp_rank = False
        self.prefill_info_table = {}  # bootstrap address -> the prefill's layout (decode)
        self.abort_timeout = float(abort_timeout if abort_timeout is not None else
                                   os.environ.get("KVX_SGLANG_ABORT_TIMEOUT", 5.0))
        self.transfer_timeout = float(transfer_timeout if transfer_timeout is not None else
                                      os.environ.get("SGLANG_DISAGGREGATION_WAITING_TIMEOUT",
                                                     300.0))
        data_path = data_path or os.environ.get("KVX_SGLANG_DATA_PATH")
        kind = getattr(args, "kv_memory_kind", "cuda")
        device = getattr(args, "gpu_id", 0) if kind == "cuda" else -1
        self.host = _advertised_host(server_args)
        # The process, so that a decode receiver can tell when a lost prefill copying into its
        # pages itself (shared memory) can write no more (sglang_receiver.py).
        options = dict(node_address.listen_options(self.host),
                       application_info=with_this_process())
        if data_path:
            options["data_path"] = data_path
        rank = getattr(args, "engine_rank", 0)
        self.agent = kvx.Agent(f"sglang-{self.mode}-{rank}-{id(self):x}", **options)
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
        # State buffers (Mamba slots, SWA pages, ...): per type, one region per tensor.
        self.state_types = list(getattr(args, "state_types", None) or [])
        self.state = [
            _Buffers([self.agent.register_memory((ptr, length, device), name=f"state.{t}.{i}")
                      for i, (ptr, length) in enumerate(zip(ptrs, lens))], items, lens)
            for t, (ptrs, lens, items) in enumerate(zip(
                getattr(args, "state_data_ptrs", None) or [],
                getattr(args, "state_data_lens", None) or [],
                getattr(args, "state_item_lens", None) or []))]
        self._peers = {}       # kvx address -> peer name
        self._remote = {}      # peer name -> its regions by name
        self._rooms = {}       # room -> the sender or receiver of it here
        self._early = {}       # room -> ([(kind, peer, body)], kept until)
        self._ranks = {}       # (bootstrap address, prefill dp rank, tp rank) -> kvx address
        self.rank_layout = self._rank_layout()
        # How each Mamba state type's items shard over the attention TP ranks (None per type
        # where not known: those move between equal TP sizes only).
        self.state_shards = state_shards.of(args, self.rank_layout["attn_tp_size"])
        self.total_heads = self._total_heads()
        self.bootstrap_address = bootstrap_address or _bootstrap_address(server_args)
        if self.mode == "prefill":
            self.register_to_bootstrap()

    def _rank_layout(self):
        """This rank's place in its engine, as SGLang's bootstrap registers it."""
        server = self.server_args
        tp_size = int(getattr(server, "tp_size", 1) or 1)
        dp_size = int(getattr(server, "dp_size", 1) or 1)
        attention_dp = bool(getattr(server, "enable_dp_attention", False))
        attn_tp = tp_size // dp_size if attention_dp else tp_size
        return {"attn_tp_size": attn_tp, "attn_tp_rank": int(getattr(self.kv_args, "engine_rank",
                                                                     0)),
                "attn_cp_size": 1, "attn_cp_rank": 0,
                "attn_dp_size": dp_size if attention_dp else 1,
                "attn_dp_rank": int(getattr(self.kv_args, "system_dp_rank", 0) or 0)
                if attention_dp else 0,
                "pp_size": int(getattr(server, "pp_size", 1) or 1),
                "pp_rank": int(getattr(self.kv_args, "pp_rank", 0) or 0),
                "system_dp_size": 1 if attention_dp else dp_size,
                "system_dp_rank": int(getattr(self.kv_args, "system_dp_rank", 0) or 0),
                "page_size": int(getattr(self.kv_args, "page_size", 1) or 1),
                "kv_cache_dtype": str(getattr(server, "kv_cache_dtype", "auto"))}

    def _total_heads(self):
        """The model's KV heads (KVArgs.total_kv_head_num, else this rank's heads x its TP)."""
        total = int(getattr(self.kv_args, "total_kv_head_num", 0) or 0)
        if total <= 0:
            total = int(getattr(self.kv_args, "kv_head_num", 1) or 1) * \
                self.rank_layout["attn_tp_size"]
        return total

    def register_to_bootstrap(self):
        """A prefill rank tells the node's bootstrap server where its kvx agent listens."""
        if self.bootstrap_address is None:
            raise kvx.InvalidArgument("a prefill manager needs the bootstrap server's address "
                                      "(server_args or bootstrap_address)")
        port = int(self.agent.listen_address.rpartition(":")[2])
        bootstrap.register(self.bootstrap_address, {**self.rank_layout, "rank_ip": self.host,
                                                    "rank_port": port})

    def try_ensure_parallel_info(self, bootstrap_addr):
        """Decode: the prefill's layout at `bootstrap_addr` is known (prefill_info_table);
        False while its ranks have not all registered. Raises kvx.InvalidArgument when its
        page size or KV cache type differs from this engine's, or when neither attention TP
        size divides the other."""
        with self.lock:
            if bootstrap_addr in self.prefill_info_table:
                return True
        info = bootstrap.parallel_info(bootstrap_addr)
        if info is None:
            return False
        for key in ("page_size", "kv_cache_dtype"):
            here = self.rank_layout[key]
            if info.get(key) is not None and info[key] != here:
                raise kvx.InvalidArgument(f"the prefill at {bootstrap_addr} has {key} "
                                          f"{info.get(key)}, this decode {here}: kvx's SGLang "
                                          "backend needs them equal")
        try:
            heads.check_sizes(int(info.get("attn_tp_size", 0)), self.rank_layout["attn_tp_size"])
        except kvx.InvalidArgument as error:
            raise kvx.InvalidArgument(f"the prefill at {bootstrap_addr}: {error}") from None
        with self.lock:
            self.prefill_info_table[bootstrap_addr] = types.SimpleNamespace(**info)
        return True

    def prefill_tp(self, bootstrap_addr):
        """The attention TP size of the prefill at `bootstrap_addr`."""
        if not self.try_ensure_parallel_info(bootstrap_addr):
            raise kvx.FailedPrecondition(f"the prefill at {bootstrap_addr} has not registered "
                                         "every rank yet")
        with self.lock:
            return int(self.prefill_info_table[bootstrap_addr].attn_tp_size)

    def rank_address(self, bootstrap_addr, prefill_dp_rank, tp_rank=None):
        """The kvx address of prefill TP rank `tp_rank` (by default this rank's own) of data
        parallel rank `prefill_dp_rank`: asked of the bootstrap server once, until
        forget_rank_address (a connect to it failed)."""
        if tp_rank is None:
            tp_rank = self.rank_layout["attn_tp_rank"]
        key = (bootstrap_addr, prefill_dp_rank, tp_rank)
        with self.lock:
            if key in self._ranks:
                return self._ranks[key]
        self.prefill_tp(bootstrap_addr)
        address = bootstrap.rank_address(bootstrap_addr, prefill_dp_rank, tp_rank,
                                         pp_rank=self.rank_layout["pp_rank"])
        with self.lock:
            self._ranks[key] = address
        return address

    def forget_rank_address(self, bootstrap_addr, prefill_dp_rank):
        """The prefill rank may have moved (restarted): the next receiver asks again."""
        with self.lock:
            for key in [k for k in self._ranks if k[:2] == (bootstrap_addr, prefill_dp_rank)]:
                del self._ranks[key]
            self.prefill_info_table.pop(bootstrap_addr, None)

    def connect(self, address):
        with self.lock:
            peer = self._peers.get(address)
            if peer is None or peer not in self.agent.peers():
                peer = self.agent.connect(address, timeout=10)
                self._peers[address] = peer
                self._remote.pop(peer, None)
            return peer

    def remote(self, peer, kv_item_lens=None):
        """`peer`'s KV, aux and state buffers (_Buffers, state a list by type), checked
        against this side's: the same buffers by name. `kv_item_lens`: a page's bytes in each
        of its KV buffers where they differ from this side's (another TP size)."""
        with self.lock:
            regions = self._remote.get(peer)
            if regions is None:
                regions = self.agent.peer_regions(peer)
                kinds = [("kv", self.kv), ("aux", self.aux)] + [
                    (f"state.{t}", buffers) for t, buffers in enumerate(self.state)]
                for prefix, mine in kinds:
                    names = [f"{prefix}.{i}" for i in range(len(mine.regions))]
                    missing = [n for n in names if n not in regions]
                    if missing or f"{prefix}.{len(names)}" in regions:
                        raise kvx.NotFound(f"{peer} does not expose the {len(names)} {prefix} "
                                           "buffers this engine has")
                self._remote[peer] = regions

            def buffers(prefix, mine, item_lens):
                names = [f"{prefix}.{i}" for i in range(len(mine.regions))]
                return _Buffers([regions[n]["id"] for n in names], item_lens,
                                [regions[n]["length"] for n in names])
            return (buffers("kv", self.kv, kv_item_lens or self.kv.item_lens),
                    buffers("aux", self.aux, self.aux.item_lens),
                    [buffers(f"state.{t}", b, b.item_lens) for t, b in enumerate(self.state)])

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


def _advertised_host(server_args):
    """The address this rank's kvx agent listens on and registers: KVX_SGLANG_HOST, else
    SGLang's own per-node SGLANG_HOST_IP, else this node's routable address (the interface
    that routes off it) where KVX_AUTH_TOKEN is set and loopback where not
    (node_address.default_host). `server_args` is not read: SGLang's --host is its HTTP
    server's."""
    del server_args
    return (os.environ.get("KVX_SGLANG_HOST") or os.environ.get("SGLANG_HOST_IP")
            or node_address.default_host())


def _bootstrap_address(server_args):
    """Where the node's bootstrap server is, from SGLang's server_args, as SGLang's backends
    find it: the first node's host (dist_init_addr) across nodes, else SGLang's --host (where
    SGLang starts the server; loopback for a wildcard), on disaggregation_bootstrap_port."""
    if server_args is None:
        return None
    port = getattr(server_args, "disaggregation_bootstrap_port", 8998)
    host = getattr(server_args, "host", None)
    if int(getattr(server_args, "nnodes", 1) or 1) > 1 and getattr(server_args,
                                                                    "dist_init_addr", None):
        host = server_args.dist_init_addr.rpartition(":")[0]
    if host in (None, "localhost") or host in node_address.WILDCARDS:
        host = node_address.LOOPBACK
    return f"{host}:{port}"


# SGLang's name for a backend's bootstrap server class.
KvxKVBootstrapServer = bootstrap.KvxKVBootstrapServer
