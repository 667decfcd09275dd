"""kvx as vLLM's v1 KV connector (KVConnectorBase_V1), for prefill/decode disaggregation.

Load it with vLLM's --kv-transfer-config:
    {"kv_connector": "KvxConnector", "kv_connector_module_path": "kvx.integrations.vllm",
     "kv_role": "kv_producer" | "kv_consumer" | "kv_both",
     "kv_connector_extra_config": {"data_path": "shm" | "tcp" | "socket",
                                   "listen_address": "127.0.0.1:0", "lease_seconds": 30,
                                   "connect_timeout": 10}}

How it moves KV (pull, as vLLM's NIXL connector does):
  - each worker registers its layers' KV tensors with a kvx agent and prepares one list of
    every (layer, K/V, block) once (vllm_layout.py);
  - a prefill request that finished (request_finished) keeps its blocks and hands the decode
    instance its block ids and its worker's kvx address in kv_transfer_params;
  - the decode scheduler asks for the remote tokens not already computed locally
    (get_num_new_matched_tokens: a prefix hit reads only the rest; a whole hit reads nothing
    and only releases the prefill blocks), and after allocation (update_state_after_alloc)
    the decode worker reads them in one transfer per request (start_load_kv; a first
    connect to a prefill worker runs on a thread of its own, so that no engine step waits
    for it, bounded by connect_timeout), whose kvx
    notification tells the prefill worker that its blocks may go (get_finished: done sending);
  - blocks a decode never reads are freed when their lease (lease_seconds) ends;
  - blocks whose read failed (the prefill died, the link broke) are reported by
    get_block_ids_with_load_errors so that vLLM recomputes them, and their request still
    finishes receiving.
  - tensor parallelism may differ between the two (prefill TP 2, decode TP 4, say): a decode
    worker reads its heads from the prefill workers that hold them, one token's head range per
    descriptor, and each prefill worker frees its blocks once every decode worker reading from
    it has read; tp_rank and tp_size come from vLLM's parallel state, or from the extra config
    where vLLM is not there.
Not yet: push (the prefill writing layer by layer into decode blocks); it raises at start-up.
vLLM itself is optional: without it the classes below stand in for its base classes, which is
how the tests drive the exact call order vLLM uses (tests/api/python/vllm_connector_test.py).
"""
import dataclasses
import logging
import threading
import time

import kvx
from kvx.integrations.vllm_layout import KvLayout, head_overlaps, readers_per_prefill_rank

try:  # vLLM's own base classes, when vLLM is installed
    from vllm.distributed.kv_transfer.kv_connector.v1.base import (
        KVConnectorBase_V1, KVConnectorHandshakeMetadata, KVConnectorMetadata, KVConnectorRole)
except ImportError:  # stand-ins with the same names and the members this module uses
    import enum

    class KVConnectorRole(enum.Enum):
        SCHEDULER = 0
        WORKER = 1

    class KVConnectorMetadata:
        pass

    class KVConnectorHandshakeMetadata:
        pass

    class KVConnectorBase_V1:
        def __init__(self, vllm_config, role, kv_cache_config=None):
            self._connector_metadata = None
            self._vllm_config = vllm_config
            self._kv_transfer_config = vllm_config.kv_transfer_config
            self._role = role

        @property
        def role(self):
            return self._role

        def bind_connector_metadata(self, connector_metadata):
            self._connector_metadata = connector_metadata

        def clear_connector_metadata(self):
            self._connector_metadata = None

        def _get_connector_metadata(self):
            assert self._connector_metadata is not None
            return self._connector_metadata

log = logging.getLogger("kvx.vllm")

NOTE_PREFIX = "kvx-vllm:read:"  # + the prefill's request id: its blocks may be freed


@dataclasses.dataclass
class KvxHandshake(KVConnectorHandshakeMetadata):
    """A worker's kvx address and KV cache layout, for the scheduler (and peers) to know."""
    engine_id: str
    tp_rank: int
    address: str
    layout: dict


@dataclasses.dataclass
class ReadSpec:
    request_id: str
    local_block_ids: list
    remote_block_ids: list
    remote_addresses: list  # the prefill workers' kvx addresses, by TP rank
    remote_request_id: str


@dataclasses.dataclass
class KvxConnectorMetadata(KVConnectorMetadata):
    """Scheduler -> worker, once per step."""
    reads: list = dataclasses.field(default_factory=list)     # ReadSpec: decode reads
    releases: list = dataclasses.field(default_factory=list)  # ReadSpec without local blocks
    sends: dict = dataclasses.field(default_factory=dict)     # request id -> lease deadline


def _extra(vllm_config):
    return dict(getattr(vllm_config.kv_transfer_config, "kv_connector_extra_config", None) or {})


def _tensor_parallel(extra):
    """(rank, size) of this worker: vLLM's parallel state when it is set up, else the extra
    config's tp_rank and tp_size (0 and 1 by default)."""
    try:
        from vllm.distributed.parallel_state import (get_tensor_model_parallel_rank,
                                                     get_tensor_model_parallel_world_size)
        return get_tensor_model_parallel_rank(), get_tensor_model_parallel_world_size()
    except Exception:  # vLLM absent, or its parallel state not initialised (scheduler side)
        return int(extra.get("tp_rank", 0)), int(extra.get("tp_size", 1))


class KvxConnector(KVConnectorBase_V1):
    def __init__(self, vllm_config, role, kv_cache_config=None):
        super().__init__(vllm_config, role, kv_cache_config)
        extra = _extra(vllm_config)
        if extra.get("mode", "pull") != "pull":
            raise NotImplementedError("kvx's vLLM connector pulls (decode reads); push is not "
                                      "there yet")
        self._engine_id = str(getattr(vllm_config.kv_transfer_config, "engine_id", None)
                              or "kvx-engine")
        self._lease = float(extra.get("lease_seconds", 30.0))
        self._connect_timeout = float(extra.get("connect_timeout", 10.0))
        self._data_path = extra.get("data_path")
        self._listen_address = extra.get("listen_address", "127.0.0.1:0")
        self._tp_rank, self._tp_size = _tensor_parallel(extra)
        self._block_size = vllm_config.cache_config.block_size
        # Scheduler side.
        self._worker_addresses = None  # by TP rank
        self._pending = KvxConnectorMetadata()
        # Worker side.
        self._agent = None
        self._layout = None
        self._regions = []
        self._peers = {}        # address -> (peer, region ids, region length), or an error
        self._connecting = set()  # addresses being connected to in the background
        self._waiting = []      # (action, ReadSpec) until their prefill workers are connected
        self._lists = {}        # (address or None, first head, count, per token) -> list id
        self._reading = {}      # request id -> ([transfer ids], local block ids)
        self._sending = {}      # request id -> [lease deadline, reads seen, reads expected]
        self._read_early = {}   # request id -> reads seen before its send was recorded
        self._failed_blocks = set()
        self._done_recving = set()
        self._lock = threading.Lock()

    # ---------------- scheduler side ----------------
    def set_xfer_handshake_metadata(self, metadata):
        """The workers' handshakes, by tensor-parallel rank."""
        ranks = sorted(metadata)
        if ranks != list(range(len(ranks))):
            raise ValueError(f"handshakes of TP ranks {ranks}: some are missing")
        self._worker_addresses = [metadata[rank].address for rank in ranks]

    def get_num_new_matched_tokens(self, request, num_computed_tokens):
        params = getattr(request, "kv_transfer_params", None) or {}
        if not params.get("do_remote_prefill"):
            return 0, False
        remaining = len(request.prompt_token_ids) - num_computed_tokens
        return (remaining, True) if remaining > 0 else (0, False)

    def update_state_after_alloc(self, request, blocks, num_external_tokens):
        params = getattr(request, "kv_transfer_params", None) or {}
        if not params.get("do_remote_prefill"):
            return
        params["do_remote_prefill"] = False  # once per request
        spec = ReadSpec(request.request_id, [], list(params["remote_block_ids"]),
                        list(params["remote_addresses"]), params["remote_request_id"])
        if num_external_tokens > 0:
            spec.local_block_ids = list(blocks.get_unhashed_block_ids())
            # A prefix already here: only the last blocks are read, into the new ones.
            spec.remote_block_ids = spec.remote_block_ids[-len(spec.local_block_ids):] \
                if spec.local_block_ids else []
            self._pending.reads.append(spec)
        else:
            self._pending.releases.append(spec)  # all of it was here: only release it

    def build_connector_meta(self, scheduler_output):
        meta, self._pending = self._pending, KvxConnectorMetadata()
        return meta

    def request_finished(self, request, block_ids):
        params = getattr(request, "kv_transfer_params", None) or {}
        if not params.get("do_remote_decode") or not block_ids:
            return False, None
        if self._worker_addresses is None:
            raise RuntimeError("kvx's vLLM connector has no worker handshakes yet "
                               "(set_xfer_handshake_metadata)")
        self._pending.sends[request.request_id] = time.monotonic() + self._lease
        return True, {"do_remote_prefill": True, "do_remote_decode": False,
                      "remote_block_ids": list(block_ids), "remote_engine_id": self._engine_id,
                      "remote_addresses": self._worker_addresses,
                      "remote_request_id": request.request_id}

    # ---------------- worker side ----------------
    def register_kv_caches(self, kv_caches):
        self._layout = KvLayout(kv_caches, self._tp_size)
        options = {"listen_address": self._listen_address}
        if self._data_path:
            options["data_path"] = self._data_path
        self._agent = kvx.Agent(f"vllm-{self._engine_id}-tp{self._tp_rank}", **options)
        self._regions = [self._agent.register_memory(kv_caches[name], name=f"kv.{name}")
                         for name in self._layout.names]

    def get_handshake_metadata(self):
        return KvxHandshake(self._engine_id, self._tp_rank, self._agent.listen_address,
                            self._layout.describe())

    def _connect(self, address):
        """Connects to the prefill worker at `address` (blocking: runs on a thread of its
        own) and records (peer, its region ids in layer order, a region's length), or the
        error."""
        try:
            peer = self._agent.connect(address, timeout=self._connect_timeout)
            regions = self._agent.peer_regions(peer)
            names = [f"kv.{name}" for name in self._layout.names]
            missing = [n for n in names if n not in regions]
            if missing:
                raise kvx.NotFound(f"the prefill worker {peer} has no KV region {missing[0]}")
            result = (peer, [regions[n]["id"] for n in names], regions[names[0]]["length"])
        except kvx.Error as error:
            result = error
        with self._lock:
            self._peers[address] = result
            self._connecting.discard(address)

    def _peer(self, address):
        """The connected prefill worker at `address` (see _connect); None while a connect
        runs in the background (started here: a connect never stalls an engine step); raises
        how the connect failed (once: the next call tries again)."""
        with self._lock:
            known = self._peers.get(address)
            if isinstance(known, kvx.Error):
                del self._peers[address]
                raise known
            if known is not None and known[0] in self._agent.peers():
                return known
            if address in self._connecting:
                return None
            self._connecting.add(address)
            self._peers.pop(address, None)
        for key in [k for k in self._lists if k[0] == address]:
            del self._lists[key]  # a reconnected peer's lists are made again
        threading.Thread(target=self._connect, args=(address,), daemon=True,
                         name="kvx-vllm-connect").start()
        return None

    def _connected(self, address):
        known = self._peer(address)
        if known is None:
            raise kvx.PeerFailed(f"the prefill worker at {address} is connecting again")
        return known

    def _ready(self, spec):
        """True when every prefill worker `spec` reads from is connected (raises a failed
        connect)."""
        ready = True
        for _, address, _, _, _, _ in self._sources(spec):
            ready = self._peer(address) is not None and ready
        return ready

    def _list(self, address, first_head, count, per_token, peer_heads):
        """A prepared list: local (address None) or the prefill worker's at `address`."""
        key = (address, first_head, count, per_token)
        if key not in self._lists:
            if address is None:
                rows = self._layout.ranges(self._regions, first_head=first_head,
                                           head_count=count, per_token=per_token)
                self._lists[key] = self._agent.prepare_local_list(rows)
            else:
                peer, regions, length = self._connected(address)
                num_blocks = length // (2 * self._layout.block_size * peer_heads *
                                        self._layout.head_bytes)
                rows = self._layout.ranges(regions, num_blocks=num_blocks, heads=peer_heads,
                                           first_head=first_head, head_count=count,
                                           per_token=per_token)
                self._lists[key] = (self._agent.prepare_remote_list(peer, rows), num_blocks)
        return self._lists[key]

    def _sources(self, spec):
        """(prefill rank, its address, first head here, first head there, count, its heads)
        for every prefill worker holding some of this worker's heads."""
        remote_tp = len(spec.remote_addresses)
        total = self._layout.heads * self._tp_size
        if total % remote_tp:
            raise kvx.InvalidArgument(f"{total} KV heads do not split over {remote_tp} "
                                      "prefill workers")
        return [(rank, spec.remote_addresses[rank], here, there, count, total // remote_tp)
                for rank, here, there, count in
                head_overlaps(self._tp_rank, self._tp_size, remote_tp, total)]

    def start_load_kv(self, forward_context, **kwargs):
        meta = self._get_connector_metadata()
        with self._lock:
            for request_id, deadline in meta.sends.items():
                seen = self._read_early.pop(request_id, (0, None))
                self._sending[request_id] = [deadline, seen[0], seen[1]]
        self._waiting.extend([(self._notify_read, spec) for spec in meta.releases] +
                             [(self._start_read, spec) for spec in meta.reads])
        self._advance()

    def _advance(self):
        """Starts the reads and releases whose prefill workers are connected; fails those
        whose connect failed."""
        waiting, self._waiting = self._waiting, []
        for action, spec in waiting:
            try:
                if not self._ready(spec):
                    self._waiting.append((action, spec))
                    continue
            except kvx.Error as error:
                log.warning("kvx: could not reach the prefill of %s: %s", spec.request_id, error)
                if action == self._start_read:
                    self._failed_blocks.update(spec.local_block_ids)
                    self._done_recving.add(spec.request_id)
                continue
            action(spec)

    def _note(self, spec):
        expected = readers_per_prefill_rank(self._tp_size, len(spec.remote_addresses))
        return f"{NOTE_PREFIX}{expected}:{spec.remote_request_id}"

    def _notify_read(self, spec):
        try:
            for _, address, _, _, _, _ in self._sources(spec):
                peer, _, _ = self._connected(address)
                self._agent.send_notification(peer, self._note(spec))
        except kvx.Error as error:  # the prefill is gone: its lease frees its blocks
            log.warning("kvx: could not release prefill blocks of %s: %s", spec.request_id, error)

    def _start_read(self, spec):
        transfers = []
        try:
            if len(spec.local_block_ids) != len(spec.remote_block_ids):
                raise kvx.InvalidArgument(
                    f"request {spec.request_id}: {len(spec.local_block_ids)} local blocks for "
                    f"{len(spec.remote_block_ids)} remote ones")
            for _, address, here, there, count, peer_heads in self._sources(spec):
                # Whole blocks where both sides hold the same heads; else a head range a token.
                per_token = not (count == self._layout.heads == peer_heads)
                entries = self._layout.block_size if per_token else 1
                local = self._list(None, here, count, per_token, peer_heads)
                remote, remote_blocks = self._list(address, there, count, per_token, peer_heads)
                transfer = self._agent.make_transfer(
                    kvx.READ, local, self._layout.indices(spec.local_block_ids, per_block=entries),
                    remote, self._layout.indices(spec.remote_block_ids, remote_blocks, entries),
                    notification=self._note(spec))
                self._agent.post(transfer)
                transfers.append(transfer)
            self._reading[spec.request_id] = (transfers, spec.local_block_ids)
        except kvx.Error as error:
            log.warning("kvx: reading the KV of %s failed: %s", spec.request_id, error)
            for transfer in transfers:
                self._agent.cancel(transfer)
                self._agent.release(transfer)
            self._failed_blocks.update(spec.local_block_ids)
            self._done_recving.add(spec.request_id)

    def wait_for_layer_load(self, layer_name):
        return  # reads run between steps (asynchronous loading), not per layer

    def save_kv_layer(self, layer_name, kv_layer, attn_metadata, **kwargs):
        return  # pull: the decode reads the prefill's blocks when it is ready

    def wait_for_save(self):
        return

    def get_finished(self, finished_req_ids):
        done_sending = set()
        if self._agent is not None:
            self._advance()
        for request_id, (transfers, blocks) in list(self._reading.items()):
            states = [self._agent.poll(t) for t in transfers]
            if all(state in ("done", "failed") for state, _ in states):
                failures = [why for state, why in states if state == "failed"]
                if failures:
                    log.warning("kvx: reading the KV of %s failed: %s", request_id, failures[0])
                    self._failed_blocks.update(blocks)
                for transfer in transfers:
                    self._agent.release(transfer)
                del self._reading[request_id]
                self._done_recving.add(request_id)
        if self._agent is not None:
            for _, payload in self._agent.take_notifications():
                text = payload.decode(errors="replace")
                if not text.startswith(NOTE_PREFIX):
                    continue
                expected, _, request_id = text[len(NOTE_PREFIX):].partition(":")
                with self._lock:
                    if request_id in self._sending:
                        entry = self._sending[request_id]
                        entry[1] += 1
                        entry[2] = int(expected)
                    else:
                        seen = self._read_early.get(request_id, (0, None))
                        self._read_early[request_id] = (seen[0] + 1, int(expected))
        now = time.monotonic()
        with self._lock:
            for request_id, (deadline, seen, expected) in list(self._sending.items()):
                read = expected is not None and seen >= expected
                if read or deadline <= now:
                    if not read:
                        log.warning("kvx: the lease of %s's prefill blocks ended unread",
                                    request_id)
                    done_sending.add(request_id)
                    del self._sending[request_id]
        done_recving, self._done_recving = self._done_recving, set()
        return (done_sending or None), (done_recving or None)

    def get_block_ids_with_load_errors(self):
        failed, self._failed_blocks = self._failed_blocks, set()
        return failed

    def shutdown(self):
        if self._agent is not None:
            self._agent.close()
            self._agent = None
