"""kvx as vLLM's v1 KV connector (KVConnectorBase_V1), for prefill/decode disaggregation.

Load it with vLLM's --kv-transfer-config:
    {"kv_connector": "KvxConnector", "kv_connector_module_path": "kvx.integrations.vllm",
     "kv_role": "kv_producer" | "kv_consumer" | "kv_both",
     "kv_connector_extra_config": {"data_path": "shm" | "tcp" | "socket",
                                   "listen_address": "127.0.0.1:0", "lease_seconds": 30}}

How it moves KV (pull, as vLLM's NIXL connector does):
  - each worker registers its layers' KV tensors with a kvx agent and prepares one list of
    every (layer, K/V, block) once (vllm_layout.py);
  - a prefill request that finished (request_finished) keeps its blocks and hands the decode
    instance its block ids and its worker's kvx address in kv_transfer_params;
  - the decode scheduler asks for the remote tokens not already computed locally
    (get_num_new_matched_tokens: a prefix hit reads only the rest; a whole hit reads nothing
    and only releases the prefill blocks), and after allocation (update_state_after_alloc)
    the decode worker reads them in one transfer per request (start_load_kv), whose kvx
    notification tells the prefill worker that its blocks may go (get_finished: done sending);
  - blocks a decode never reads are freed when their lease (lease_seconds) ends;
  - blocks whose read failed (the prefill died, the link broke) are reported by
    get_block_ids_with_load_errors so that vLLM recomputes them, and their request still
    finishes receiving.
Not yet: push (the prefill writing layer by layer into decode blocks) and tensor parallelism
that differs between prefill and decode (heads split differently); both raise at start-up.
vLLM itself is optional: without it the classes below stand in for its base classes, which is
how the tests drive the exact call order vLLM uses (tests/api/python/vllm_connector_test.py).
"""
import dataclasses
import logging
import threading
import time

import kvx
from kvx.integrations.vllm_layout import KvLayout

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
    remote_address: str
    remote_request_id: str


@dataclasses.dataclass
class KvxConnectorMetadata(KVConnectorMetadata):
    """Scheduler -> worker, once per step."""
    reads: list = dataclasses.field(default_factory=list)     # ReadSpec: decode reads
    releases: list = dataclasses.field(default_factory=list)  # ReadSpec without local blocks
    sends: dict = dataclasses.field(default_factory=dict)     # request id -> lease deadline


def _extra(vllm_config):
    return dict(getattr(vllm_config.kv_transfer_config, "kv_connector_extra_config", None) or {})


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
        self._data_path = extra.get("data_path")
        self._listen_address = extra.get("listen_address", "127.0.0.1:0")
        self._tp_rank = int(extra.get("tp_rank", 0))
        self._block_size = vllm_config.cache_config.block_size
        # Scheduler side.
        self._worker_address = None
        self._pending = KvxConnectorMetadata()
        # Worker side.
        self._agent = None
        self._layout = None
        self._local_list = None
        self._peers = {}        # address -> (peer name, remote list, remote num_blocks)
        self._reading = {}      # request id -> (transfer id, local block ids)
        self._sending = {}      # request id -> lease deadline
        self._read_early = set()  # prefill requests read before their send was recorded
        self._failed_blocks = set()
        self._done_recving = set()
        self._lock = threading.Lock()

    # ---------------- scheduler side ----------------
    def set_xfer_handshake_metadata(self, metadata):
        """The workers' handshakes, by tensor-parallel rank."""
        ranks = sorted(metadata)
        if ranks != list(range(len(ranks))) or len(ranks) != 1:
            raise NotImplementedError("kvx's vLLM connector handles one worker per engine "
                                      f"(tensor parallel 1) for now, not ranks {ranks}")
        self._worker_address = metadata[0].address

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
                        params["remote_address"], params["remote_request_id"])
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
        if self._worker_address is None:
            raise RuntimeError("kvx's vLLM connector has no worker handshake yet "
                               "(set_xfer_handshake_metadata)")
        self._pending.sends[request.request_id] = time.monotonic() + self._lease
        return True, {"do_remote_prefill": True, "do_remote_decode": False,
                      "remote_block_ids": list(block_ids), "remote_engine_id": self._engine_id,
                      "remote_address": self._worker_address,
                      "remote_request_id": request.request_id}

    # ---------------- worker side ----------------
    def register_kv_caches(self, kv_caches):
        self._layout = KvLayout(kv_caches)
        options = {"listen_address": self._listen_address}
        if self._data_path:
            options["data_path"] = self._data_path
        self._agent = kvx.Agent(f"vllm-{self._engine_id}-tp{self._tp_rank}", **options)
        regions = [self._agent.register_memory(kv_caches[name], name=f"kv.{name}")
                   for name in self._layout.names]
        self._local_list = self._agent.prepare_local_list(self._layout.ranges(regions))

    def get_handshake_metadata(self):
        return KvxHandshake(self._engine_id, self._tp_rank, self._agent.listen_address,
                            self._layout.describe())

    def _peer(self, address):
        """(peer, remote list, its num_blocks) for the prefill worker at `address`."""
        known = self._peers.get(address)
        if known is not None and known[0] in self._agent.peers():
            return known
        peer = self._agent.connect(address, timeout=10)
        regions = self._agent.peer_regions(peer)
        names = [f"kv.{name}" for name in self._layout.names]
        missing = [n for n in names if n not in regions]
        if missing:
            raise kvx.NotFound(f"the prefill worker {peer} has no KV region {missing[0]}")
        ids = [regions[n]["id"] for n in names]
        num_blocks = regions[names[0]]["length"] // (2 * self._layout.block_bytes)
        remote_list = self._agent.prepare_remote_list(
            peer, self._layout.ranges(ids, num_blocks=num_blocks))
        self._peers[address] = (peer, remote_list, num_blocks)
        return self._peers[address]

    def start_load_kv(self, forward_context, **kwargs):
        meta = self._get_connector_metadata()
        with self._lock:
            self._sending.update(meta.sends)
            for request_id in list(meta.sends):
                if request_id in self._read_early:  # its decode was quicker than our step
                    self._read_early.discard(request_id)
                    self._sending[request_id] = 0.0
        for spec in meta.releases:
            self._notify_read(spec)
        for spec in meta.reads:
            self._start_read(spec)

    def _notify_read(self, spec):
        try:
            peer, _, _ = self._peer(spec.remote_address)
            self._agent.send_notification(peer, NOTE_PREFIX + spec.remote_request_id)
        except kvx.Error as error:  # the prefill is gone: its lease frees its blocks
            log.warning("kvx: could not release prefill blocks of %s: %s", spec.request_id, error)

    def _start_read(self, spec):
        try:
            if len(spec.local_block_ids) != len(spec.remote_block_ids):
                raise kvx.InvalidArgument(
                    f"request {spec.request_id}: {len(spec.local_block_ids)} local blocks for "
                    f"{len(spec.remote_block_ids)} remote ones")
            peer, remote_list, remote_blocks = self._peer(spec.remote_address)
            transfer = self._agent.make_transfer(
                kvx.READ, self._local_list, self._layout.indices(spec.local_block_ids),
                remote_list, self._layout.indices(spec.remote_block_ids, remote_blocks),
                notification=NOTE_PREFIX + spec.remote_request_id)
            self._agent.post(transfer)
            self._reading[spec.request_id] = (transfer, spec.local_block_ids)
        except kvx.Error as error:
            log.warning("kvx: reading the KV of %s failed: %s", spec.request_id, error)
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
        for request_id, (transfer, blocks) in list(self._reading.items()):
            state, why = self._agent.poll(transfer)
            if state in ("done", "failed"):
                if state == "failed":
                    log.warning("kvx: reading the KV of %s failed: %s", request_id, why)
                    self._failed_blocks.update(blocks)
                self._agent.release(transfer)
                del self._reading[request_id]
                self._done_recving.add(request_id)
        if self._agent is not None:
            for _, payload in self._agent.take_notifications():
                text = payload.decode(errors="replace")
                if not text.startswith(NOTE_PREFIX):
                    continue
                request_id = text[len(NOTE_PREFIX):]
                with self._lock:
                    if request_id in self._sending:
                        self._sending[request_id] = 0.0  # read: free now
                    else:
                        self._read_early.add(request_id)
        now = time.monotonic()
        with self._lock:
            for request_id, deadline in list(self._sending.items()):
                if deadline <= now:
                    if deadline > 0.0:
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
