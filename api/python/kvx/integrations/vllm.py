"""kvx as vLLM's v1 KV connector (KVConnectorBase_V1), for prefill/decode disaggregation.

Load it with vLLM's --kv-transfer-config:
    {"kv_connector": "KvxConnector", "kv_connector_module_path": "kvx.integrations.vllm",
     "kv_role": "kv_producer" | "kv_consumer" | "kv_both",
     "kv_connector_extra_config": {"mode": "pull" | "push", "data_path": "shm" | "tcp" |
                                   "socket", "host": "10.0.0.5", "port": 5600,
                                   "lease_seconds": 30, "connect_timeout": 10,
                                   "push_timeout": 30}}
Across nodes every node may share that config: each sets KVX_VLLM_HOST (its address for
peers; by default the interface that routes off the node), and KVX_AUTH_TOKEN (the shared
secret); "port" is a base from which each worker takes its own (vllm_node.py).

Each worker registers the buffers behind its layers' KV tensors with a kvx agent, whatever
layout vLLM chose (vllm_layout.py, vllm_geometry.py), and prepares its lists once per peer and
range of heads (vllm_links.py). A first connect to another worker runs on a thread of its
own, bounded by connect_timeout, so that no engine step waits for it.

Pull (the default, as vLLM's NIXL connector; vllm_pull.py):
  - a prefill request that finished (request_finished) keeps its blocks and hands the decode
    instance its block ids, its workers' kvx addresses and cache layout in kv_transfer_params;
  - the decode scheduler asks for the remote tokens not already computed locally
    (get_num_new_matched_tokens: a prefix hit reads only the rest; a whole hit reads nothing
    and only releases the prefill blocks), and after allocation (update_state_after_alloc)
    the decode worker reads them in one transfer per prefill worker (start_load_kv), whose
    notification tells that worker its blocks may go (get_finished: done sending);
  - blocks a decode never reads are freed when their lease (lease_seconds) ends.
Push (mode "push" on both instances; vllm_push.py): the decode instance gets the request
first, its kv_transfer_params naming the prefill's workers (remote_addresses, the addresses
they listen on) and its request id there (remote_request_id); once its blocks are allocated
the decode worker tells those workers where to write, and the prefill worker writes each layer
as it is computed (save_kv_layer). The prefill instance gets the same request with
{"do_remote_decode": true}.
Both:
  - blocks whose transfer failed (the prefill died, the link broke, the push timed out) are
    reported by get_block_ids_with_load_errors so that vLLM recomputes them, and their request
    still finishes receiving; no byte of a failed transfer lands after that;
  - tensor parallelism may differ between the two (prefill TP 2, decode TP 4, say, or heads
    replicated where TP is above the model's KV heads): a decode worker's heads move from
    prefill workers that hold them (vllm_heads.py); tp_rank and tp_size come from vLLM's
    parallel state, or from the extra config where vLLM is not there;
  - the two caches must agree on layers, block sizes, element type, head size, the model's
    KV heads and the layout of a block; a request between caches that do not fails with
    kvx.InvalidArgument, naming both sides' values, in the log and its blocks reported
    failed;
  - with the hybrid allocator a request's blocks are a list per KV cache group
    (vllm_groups.py); a Mamba group's blocks are whole states (vllm_states.py), and the
    prefill then computes all but the prompt's last token (vllm_state_tokens.py).
vLLM itself is optional: without it vllm_upstream.py stands in for its base classes, which is
how the tests drive the exact call order vLLM uses (tests/api/python/vllm_connector_test.py).
"""
import logging
import time

import kvx
from kvx.integrations import state_slices
from kvx.integrations import vllm_config as config
from kvx.integrations import vllm_messages as messages
from kvx.integrations import vllm_groups as groups
from kvx.integrations import vllm_stages as stages
from kvx.integrations import vllm_state_tokens as state_tokens
from kvx.integrations.vllm_layout import KvLayout, check_covered
from kvx.integrations.peer_process import with_this_process
from kvx.integrations.vllm_chunks import PromptChunks
from kvx.integrations.vllm_links import PeerLinks
from kvx.integrations.vllm_node import worker_address
from kvx.integrations.vllm_pull import PullReader, ReadLease
from kvx.integrations.vllm_push import PushReceiver, PushWriter
from kvx.integrations.vllm_metadata import (KvxConnectorMetadata, KvxHandshake,  # noqa: F401
                                            KvxWorkerMetadata, ReadSpec)
from kvx.integrations.vllm_stats import KvxConnectorStats
from kvx.integrations.vllm_upstream import (KVConnectorBase_V1, KVConnectorRole,  # noqa: F401
                                            KVConnectorWorkerMetadata, SupportsHMA)

log = logging.getLogger("kvx.vllm")


class KvxConnector(KVConnectorBase_V1, SupportsHMA):
    def __init__(self, vllm_config, role, kv_cache_config=None):
        super().__init__(vllm_config, role, kv_cache_config)
        extra = config.extra(vllm_config)
        self._mode = extra.get("mode", "pull")
        if self._mode not in ("pull", "push"):
            raise ValueError(f"kvx's vLLM connector mode is 'pull' or 'push', not "
                             f"{self._mode!r}")
        self._engine_id = str(getattr(vllm_config.kv_transfer_config, "engine_id", None)
                              or "kvx-engine")
        self._lease = float(extra.get("lease_seconds", 30.0))
        self._connect_timeout = float(extra.get("connect_timeout", 10.0))
        self._push_timeout = float(extra.get("push_timeout", self._lease))
        self._data_path = extra.get("data_path")
        self._tp_rank, self._tp_size = config.tensor_parallel(extra)
        self._pp_rank, self._pp_size = stages.pipeline(extra)
        self._address = worker_address(extra, (
            config.data_parallel_rank(vllm_config) * self._pp_size + self._pp_rank) * self._tp_size +
            self._tp_rank)
        self._block_size = vllm_config.cache_config.block_size
        self._groups = groups.kv_cache_groups(kv_cache_config, self._block_size)
        self._keep = [None] if self._groups is None else [g.keep for g in self._groups]
        self._stateful = any(g.state for g in self._groups or ())  # a Mamba group
        # Scheduler side.
        self._workers = None   # KvxHandshake by pipeline stage, by TP rank
        self._pending = KvxConnectorMetadata()
        self._held = set()     # prefill requests whose blocks wait for done sending
        self._workers_pending = False  # a worker said it has work that needs steps
        self._answering = {}   # aborted push requests -> until when a late dest is answered
        # Decode requests not yet allocated -> (prefill request, its workers, their lease).
        self._awaiting = {}
        self._chunks = PromptChunks()  # push prefill requests before their last chunk
        self._next_heartbeat = 0.0
        # Worker side (made by register_kv_caches).
        self._agent = None
        self._layout = None
        self._links = None
        self._reader = self._lease_of_reads = None   # pull
        self._writer = self._receiver = None         # push
        self._waiting = []      # (action, ReadSpec) until their prefill workers are connected
        self._failed_blocks = set()
        self._done_recving = set()

    # ---------------- scheduler side ----------------
    def _kv_role(self):
        return getattr(self._vllm_config.kv_transfer_config, "kv_role", None)

    def set_xfer_handshake_metadata(self, metadata):
        """The workers' handshakes, by tensor-parallel rank (one pipeline stage)."""
        self.set_xfer_handshake_metadata_pp_aware({(0, rank): meta
                                                   for rank, meta in metadata.items()})

    def set_xfer_handshake_metadata_pp_aware(self, metadata):
        """The workers' handshakes, by (pipeline rank, tensor-parallel rank)."""
        self._workers = stages.by_stage(metadata)

    def get_num_new_matched_tokens(self, request, num_computed_tokens):
        params = getattr(request, "kv_transfer_params", None) or {}
        if not params.get("do_remote_prefill"):
            if params.get("do_remote_decode") and self._stateful:
                state_tokens.shorten_for_prefill(request)  # vllm_state_tokens.py
            return 0, False
        # Until its blocks are allocated, the request keeps the prefill's lease alive.
        if params.get("remote_addresses") and params.get("remote_request_id") is not None:
            self._awaiting[request.request_id] = (
                params["remote_request_id"], stages.addresses(stages.stages(params)),
                float(params.get("remote_lease_seconds") or self._lease))
        remaining = state_tokens.prompt_tokens_to_load(request, self._stateful) - \
            num_computed_tokens
        return (remaining, True) if remaining > 0 else (0, False)

    def update_state_after_alloc(self, request, blocks, num_external_tokens):
        self._awaiting.pop(request.request_id, None)
        params = getattr(request, "kv_transfer_params", None) or {}
        if params.get("do_remote_decode") and self._mode == "push":
            self._chunks.add(request, blocks.get_block_ids())  # planned at its last chunk
            return
        if not params.get("do_remote_prefill"):
            return
        params["do_remote_prefill"] = False  # once per request
        spec = ReadSpec(request.request_id, [], groups.as_groups(params.get("remote_block_ids")),
                        list(params["remote_addresses"]), params["remote_request_id"],
                        params.get("remote_layout"), remote_stages=stages.stages(params))
        if num_external_tokens > 0:
            every = groups.as_groups(blocks.get_block_ids())
            new = (blocks.get_unhashed_block_ids_all_groups() if len(every) > 1 else
                   [blocks.get_unhashed_block_ids()])
            spec.local_block_ids = groups.clip(groups.as_groups(new), self._keep)
            # A prefix already here: only the last blocks move, into the new ones.
            spec.skip = [len(ids) - len(mine) for ids, mine in zip(every, spec.local_block_ids)]
            if len(spec.remote_block_ids) == len(spec.local_block_ids):
                spec.remote_block_ids = [theirs[-len(mine):] if mine else [] for theirs, mine in
                                         zip(spec.remote_block_ids, spec.local_block_ids)]
            self._pending.reads.append(spec)
        else:
            self._pending.releases.append(spec)  # all of it was here: only release it

    def build_connector_meta(self, scheduler_output):
        meta, self._pending = self._pending, KvxConnectorMetadata()
        meta.saves.update(self._chunks.due(scheduler_output))
        now = time.monotonic()
        if self._awaiting and now >= self._next_heartbeat:
            # A third of the shortest lease, so that two heartbeats may be late.
            self._next_heartbeat = now + min(lease for _, _, lease in
                                             self._awaiting.values()) / 3
            meta.heartbeats = {remote: addresses for remote, addresses, _ in
                               self._awaiting.values()}
        return meta

    def request_finished(self, request, block_ids):
        """request_finished_all_groups with one KV cache group (vLLM without its hybrid
        allocator)."""
        return self.request_finished_all_groups(request, (list(block_ids or []),))

    def request_finished_all_groups(self, request, block_ids):
        """Prefill: keeps the blocks of a request that finished normally (length capped or
        stopped) for the decode, and frees those of any other at once; `block_ids` are a list
        per KV cache group (SupportsHMA). Decode: a request dropped before its blocks were
        allocated releases the prefill's blocks now."""
        block_ids = groups.as_groups(block_ids)
        self._awaiting.pop(request.request_id, None)
        self._chunks.drop(request.request_id)
        params = getattr(request, "kv_transfer_params", None) or {}
        if params.get("do_remote_prefill"):
            params["do_remote_prefill"] = False
            if not params.get("remote_addresses") or params.get("remote_request_id") is None:
                return False, None
            self._pending.releases.append(ReadSpec(
                request.request_id, [], [], list(params["remote_addresses"]),
                params["remote_request_id"], params.get("remote_layout"),
                remote_stages=stages.stages(params)))
            return False, None
        if not params.get("do_remote_decode") or not groups.flat(block_ids):
            return False, None
        if not config.finished_normally(request):
            if self._mode == "push":
                # A decode may still send its dest for it: the engine keeps stepping for as
                # long as the lease would have run, so that the dest is answered.
                self._pending.aborts.append(request.request_id)
                self._answering[request.request_id] = time.monotonic() + self._lease
            return False, None
        if self._workers is None:
            raise RuntimeError("kvx's vLLM connector has no worker handshakes yet "
                               "(set_xfer_handshake_metadata)")
        self._pending.sends[request.request_id] = time.monotonic() + self._lease
        self._held.add(request.request_id)
        return True, {"do_remote_prefill": True, "do_remote_decode": False,
                      "remote_block_ids": groups.wire(groups.clip(block_ids, self._keep)),
                      "remote_engine_id": self._engine_id, **stages.params(self._workers),
                      "remote_request_id": request.request_id, "transfer_mode": self._mode,
                      "remote_lease_seconds": self._lease}

    def update_connector_output(self, connector_output):
        """The workers' finished sends and metadata (aggregated over the TP ranks by vLLM)."""
        for request_id in getattr(connector_output, "finished_sending", None) or ():
            self._held.discard(request_id)
        worker_meta = getattr(connector_output, "kv_connector_worker_meta", None)
        self._workers_pending = bool(getattr(worker_meta, "pending", False))

    def has_pending_push_work(self):
        """True while blocks are kept for a decode, an aborted push may still get a decode's
        dest (for as long as its lease would have run), metadata waits for the workers, or a
        worker has work of its own (KvxWorkerMetadata): vLLM keeps stepping the engine, idle or not,
        so that the workers see the decode's reads, destinations and cancels, the leases
        end and every decode hears how its request ended."""
        now = time.monotonic()
        for request_id in [r for r, until in self._answering.items() if until <= now]:
            del self._answering[request_id]
        return bool(self._held or self._answering or self._pending.aborts or
                    self._pending.releases or self._workers_pending)

    def build_connector_worker_meta(self):
        return KvxWorkerMetadata(bool(self._waiting) or
                                 (self._writer is not None and self._writer.settling()))

    # ---------------- worker side ----------------
    @classmethod
    def get_required_kvcache_layout(cls, vllm_config):
        """HND (heads outside tokens in a block) where vLLM lets the connector choose: a
        range of heads is then one run a block, not one a token. kvx serves NHD, blocks-first
        and layer-interleaved layouts too, as long as both instances use the same; None for
        MLA, which has no heads to split."""
        model = getattr(vllm_config, "model_config", None)
        return None if getattr(model, "use_mla", False) else "HND"

    def register_kv_caches(self, kv_caches):
        self._layout = KvLayout(kv_caches, self._block_size, self._tp_size,
                                config.total_kv_heads(self._vllm_config), self._groups)
        # The process, so that a decode worker can tell when a lost prefill worker copying into
        # its cache itself (shared memory) can write no more (vllm_push.py).
        options = dict(self._address.agent_options(), application_info=with_this_process())
        if self._data_path:
            options["data_path"] = self._data_path
        stage = f"-pp{self._pp_rank}" if self._pp_size > 1 else ""
        self._agent = kvx.Agent(f"vllm-{self._engine_id}{stage}-tp{self._tp_rank}", **options)
        # One region per buffer: the layers' views of a shared buffer are offsets into it.
        # The layout holds the tensors, so the buffers outlive their registration.
        regions = [self._agent.register_memory(buffer, name=name) for buffer, name in
                   zip(self._layout.buffers, self._layout.buffer_names())]
        self._links = PeerLinks(self._agent, self._layout, regions, self._connect_timeout,
                                self._tp_rank)
        if self._mode == "pull":
            self._reader = PullReader(self._agent, self._links, self._layout, self._tp_rank,
                                      self._tp_size, self._pp_size)
            self._lease_of_reads = ReadLease(self._lease)
        else:
            self._writer = PushWriter(self._agent, self._links, self._layout, self._tp_rank,
                                      self._tp_size, self._lease)
            self._receiver = PushReceiver(self._agent, self._layout, self._push_timeout,
                                          self._connect_timeout, self._writer.tally)

    def get_handshake_metadata(self):
        return KvxHandshake(self._engine_id, self._tp_rank,
                            self._address.advertised(self._agent.listen_address),
                            self._layout.describe(), self._pp_rank)

    def bind_connector_metadata(self, connector_metadata):
        """Before the step's forward (vLLM calls start_load_kv after it, unless a load is
        synchronous): the prefill requests whose layers this forward computes are planned
        here, so that each save_kv_layer finds them."""
        super().bind_connector_metadata(connector_metadata)
        if self._agent is None:
            return
        for request_id, deadline in connector_metadata.sends.items():
            if self._writer is not None:
                self._writer.finished(request_id, deadline)
            else:
                self._lease_of_reads.start(request_id, deadline)
        for request_id, blocks in connector_metadata.saves.items():
            self._writer.plan(request_id, blocks)
        for request_id in connector_metadata.aborts:
            self._writer.abort(request_id)
        if self._tp_rank == self._pp_rank == 0:  # one decode worker keeps the leases alive
            for remote, addresses in connector_metadata.heartbeats.items():
                self._heartbeat(remote, addresses)

    def _heartbeat(self, remote_request_id, addresses):
        for address in addresses:
            try:
                peer = self._links.peer(address)
                if peer is not None:
                    self._agent.send_notification(peer, messages.alive(remote_request_id))
            except kvx.Error as error:
                log.info("kvx: no heartbeat to %s for %s: %s", address, remote_request_id,
                         error)

    def start_load_kv(self, forward_context, **kwargs):
        meta = self._get_connector_metadata()
        self._waiting.extend([(self._release, spec) for spec in meta.releases] +
                             [(self._load, spec) for spec in meta.reads])
        self._advance()

    def _advance(self):
        """Starts the loads and releases whose prefill workers are connected; fails those
        whose connect failed."""
        waiting, self._waiting = self._waiting, []
        for action, spec in waiting:
            try:
                sources = stages.prefill_contacts(spec, self._tp_rank, self._tp_size,
                                                  self._layout)
                if not self._links.ready([address for address, _, _ in sources]):
                    self._waiting.append((action, spec))
                    continue
                action(spec, sources)
            except kvx.Error as error:
                log.warning("kvx: the KV of %s cannot move: %s", spec.request_id, error)
                if action == self._load:
                    self._failed_blocks.update(groups.flat(spec.local_block_ids))
                    self._done_recving.add(spec.request_id)
                    (self._reader or self._receiver).tally.failed()

    def _release(self, spec, sources):
        if self._reader is not None:
            self._reader.release(spec, sources)
        else:
            self._send_destinations(spec, sources)

    def _load(self, spec, sources):
        if self._reader is not None:
            self._reader.read(spec, sources)
        else:
            check_covered(self._layout.describe(), [layout for _, _, layout in sources],
                          spec.request_id)
            writers = self._send_destinations(spec, sources)
            self._receiver.expect(spec.request_id, spec.remote_request_id,
                                  spec.local_block_ids, writers)

    def _send_destinations(self, spec, sources):
        """Push: tells each prefill worker holding some of the heads or the Mamba states where
        the blocks go (and one that writes none that it need not wait); returns those that
        write, as (peer, its cache layout, whether it writes each KV cache group)."""
        text = messages.dest(messages.Destination(
            spec.remote_request_id, spec.request_id, spec.local_block_ids, spec.skip,
            self._tp_rank, self._tp_size, self._layout.describe(), self._pp_size))
        writers = []
        remote_tp = len(spec.remote_addresses)
        for address, source, layout in sources:
            peer = self._links.connected(address)
            state = self._layout.state is not None and source.rank in \
                state_slices.sources(self._tp_rank, self._tp_size, remote_tp)
            if source.count or state:
                self._agent.send_notification(peer, text)
                writers.append((peer, layout, [state if s else bool(source.count)
                                               for s in self._layout.stateful]))
            else:  # a replica no decode worker reads: an empty destination releases it
                self._agent.send_notification(peer, messages.dest(messages.Destination(
                    spec.remote_request_id, spec.request_id, [], 0, self._tp_rank,
                    self._tp_size, self._layout.describe(), self._pp_size)))
        return writers

    def wait_for_layer_load(self, layer_name):
        return  # reads and pushes land between steps (asynchronous loading), not per layer

    def save_kv_layer(self, layer_name, kv_layer, attn_metadata, **kwargs):
        if self._writer is None:
            return  # pull: the decode reads the prefill's blocks when it is ready
        # Forward order; written once the compute stream has passed this layer, which the
        # forward never waits for (nor may, inside a CUDA graph's capture).
        rank = self._layout.save_rank.get(layer_name)
        if rank is not None:  # None: a layer that reuses another layer's KV (in no group)
            self._writer.layer_saved(rank, self._layer_ready(kv_layer))

    @staticmethod
    def _layer_ready(kv_layer):
        """A query of whether the layer's compute is done: an event recorded on the current
        CUDA stream after it; None for a CPU tensor (done when save_kv_layer is called)."""
        if not getattr(kv_layer, "is_cuda", False):
            return None
        import torch
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(kv_layer.device))
        return event.query

    @classmethod
    def requires_piecewise_for_cudagraph(cls, extra_config):
        """Push saves layer by layer from inside the forward: vLLM then captures CUDA graphs
        piecewise, the attention layers (and save_kv_layer) outside them."""
        return (extra_config or {}).get("mode") == "push"

    def wait_for_save(self):
        """After the forward: the Mamba layers' states, which no save_kv_layer names, are
        written once the compute stream has passed the forward. Pushes complete between
        steps; get_finished says when the blocks may go."""
        if self._writer is not None and self._layout.state is not None:
            self._writer.forward_done(self._layer_ready(self._layout.any_tensor()))

    def _take_notifications(self):
        for peer, payload in self._agent.take_notifications():
            parsed = messages.parse(payload)
            if parsed is None:
                continue
            kind, fields = parsed
            if kind == "read" and self._lease_of_reads is not None:
                self._lease_of_reads.on_read(*fields)
            elif kind == "alive":
                (self._lease_of_reads or self._writer).on_alive(fields, time.monotonic())
            elif self._writer is None:
                continue
            elif kind == "dest":
                self._writer.on_dest(peer, fields)
            elif kind == "cancel":
                self._writer.on_cancel(peer, *fields)
            elif kind == "pushed":
                self._receiver.on_pushed(*fields)
            elif kind == "push-failed":
                self._receiver.on_failed(peer, *fields)
            elif kind == "cancelled":
                self._receiver.on_cancelled(peer, fields)

    def get_finished(self, finished_req_ids):
        if self._agent is None:
            return None, None
        self._advance()
        self._take_notifications()
        now = time.monotonic()
        if self._reader is not None:
            ended = self._reader.poll()
            done_sending = self._lease_of_reads.poll(now)
        else:
            ended = self._receiver.poll(now)
            done_sending = self._writer.poll(now)
        for request_id, blocks, failure in ended:
            if failure is not None:
                log.warning("kvx: moving the KV of %s failed: %s", request_id, failure)
                self._failed_blocks.update(blocks)
            self._done_recving.add(request_id)
        done_recving, self._done_recving = self._done_recving, set()
        return (done_sending or None), (done_recving or None)

    def get_kv_connector_stats(self):
        """This worker's transfers since the last call (KvxConnectorStats), None if none
        ended: reads on a pulling decode, writes on a pushing prefill."""
        mover = self._reader or self._writer
        return mover.tally.take() if mover is not None else None

    @classmethod
    def build_kv_connector_stats(cls, data=None):
        return KvxConnectorStats(data=dict(data or {}))

    def get_block_ids_with_load_errors(self):
        failed, self._failed_blocks = self._failed_blocks, set()
        return failed

    def shutdown(self):
        if self._agent is not None:
            self._agent.close()
            self._agent = None
