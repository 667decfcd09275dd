"""Just enough of vLLM for the connector tests to drive kvx's connector in the order vLLM calls
it (vLLM itself cannot be installed here): requests, allocated blocks, configs, a block pool,
KV caches as vLLM allocates them (vllm_caches.py), and one engine step of the connector calls
in the order of vLLM's KV connector model-runner mixin
(vllm/v1/worker/kv_connector_model_runner_mixin.py @00f4240): bind_connector_metadata, the
forward (each layer: wait_for_layer_load, its compute, save_kv_layer, in forward order; none
on a step that schedules no tokens), then
start_load_kv (after the forward: the steps here have no synchronous loads), wait_for_save,
get_finished, get_block_ids_with_load_errors, get_kv_connector_stats and
build_connector_worker_meta (each aggregated over the workers), clear_connector_metadata; then the scheduler's update_connector_output. A TP rank holds the
model's KV heads as vLLM splits them: total // tp each, or one head per rank, replicated over
tp // total ranks, where TP is above the heads."""
import enum
import math
import types
import uuid

import numpy as np
import torch

from kvx.integrations.vllm import KvxConnector, KVConnectorRole
import fake_vllm_states as states
from fake_vllm_groups import (NULL_BLOCK, FullAttentionSpec, kv_cache_config, layer_groups,
                              mamba_mode, request_blocks, share_tensors)
from vllm_caches import allocate, layer_names, parts

# HEADS: the model's KV heads, over all TP ranks. BLOCK_SIZE: the scheduler's; the caches'
# kernel blocks are KERNEL_BLOCK tokens (two per scheduler block).
LAYERS, BLOCK_SIZE, KERNEL_BLOCK, HEADS, HEAD_DIM = 12, 32, 16, 4, 32
DTYPE = torch.float16
DEFAULT_LAYOUT = "LBHNC"


class RequestStatus(enum.Enum):
    """The finish statuses of vLLM's requests a connector tells apart (vllm/v1/request.py; the
    NIXL push scheduler, nixl/push_scheduler.py @0316d25, keeps blocks only for the first two)."""
    FINISHED_STOPPED = enum.auto()
    FINISHED_LENGTH_CAPPED = enum.auto()
    FINISHED_ABORTED = enum.auto()


def assign_request_id(external_id):
    """The id vLLM gives a request inside the engine: the external id and a random 8-character
    suffix (InputProcessor.assign_request_id, vllm/v1/engine/input_processor.py @009daae), so
    that no proxy knows it in advance."""
    return f"{external_id}-{uuid.uuid4().hex[:8]}"


class Request:
    """vLLM's Request (vllm/v1/request.py), the members a connector reads or changes."""

    def __init__(self, request_id, num_tokens, kv_transfer_params=None,
                 status=RequestStatus.FINISHED_LENGTH_CAPPED):
        self.request_id = request_id
        self.prompt_token_ids = list(range(num_tokens))
        self.prompt_embeds = None
        self._all_token_ids = list(self.prompt_token_ids)
        self.num_prompt_tokens = num_tokens
        self.max_tokens = 16
        self.kv_transfer_params = kv_transfer_params
        self.status = status  # how it finishes (a prefill: length capped at one token)


class Blocks:
    """vLLM's KVCacheBlocks, as the connector sees it."""

    def __init__(self, block_ids, unhashed=None):
        self._ids = list(block_ids)
        self._unhashed = list(block_ids if unhashed is None else unhashed)

    def get_block_ids(self):
        return (self._ids,)

    def get_unhashed_block_ids(self):
        return self._unhashed


def config(role, engine_id, total_heads=HEADS, mla=False, host="127.0.0.1", hybrid=False,
           **extra):
    """A vllm_config for the connector; `host` None leaves the connector to choose it (the
    KVX_VLLM_HOST variable, else the node's routable address)."""
    if host is not None:
        extra["host"] = host
    transfer = types.SimpleNamespace(kv_role=role, engine_id=engine_id,
                                     kv_connector_extra_config=extra)
    model = types.SimpleNamespace(use_mla=mla, get_total_num_kv_heads=lambda: total_heads)
    return types.SimpleNamespace(kv_transfer_config=transfer, model_config=model,
                                 cache_config=types.SimpleNamespace(block_size=BLOCK_SIZE))


def connector(vllm_config, role, hybrid, names, tp_size=1):
    """KvxConnector as vLLM's factory makes it: (vllm_config, role, kv_cache_config)."""
    groups = kv_cache_config(names, BLOCK_SIZE, hybrid, tp_size) if hybrid else \
        types.SimpleNamespace(
        kv_cache_groups=[types.SimpleNamespace(layer_names=list(names),
                                               kv_cache_spec=FullAttentionSpec())])
    return KvxConnector(vllm_config, role, groups)


def held_heads(rank, tp_size, total):
    """(first, count) of the model's KV heads that a TP rank holds, as vLLM splits them."""
    return rank * total // tp_size, max(1, total // tp_size)


class Engine:
    """One vLLM instance: a scheduler-side connector and `tp_size` workers, each with its
    worker-side connector and its share of the heads in KV caches of `num_blocks` blocks per
    layer; block ids (one free list) are shared by the workers, as in vLLM. `hybrid`: two KV
    cache groups (fake_vllm_groups.py), a request's blocks a list per group: True or
    "sliding" for a sliding window group, "mamba" or "mamba-align" for a Mamba group
    (fake_vllm_states.py). `pp_size`:
    pipeline stages, a worker per (stage, TP rank), each with its stage's layers only (a
    consecutive share of them, as vLLM's get_pp_indices splits them); workers are numbered
    stage by stage. `device`: where the caches are ("cuda" on a GPU)."""

    def __init__(self, role, engine_id, num_blocks, tp_size=1, head_dim=HEAD_DIM,
                 layout=DEFAULT_LAYOUT, total_heads=HEADS, hybrid=False, pp_size=1,
                 device="cpu", **extra):
        self.tp_size, self.layout, self.total_heads = tp_size, layout, total_heads
        self.pp_size = pp_size
        self.hybrid = "sliding" if hybrid is True else hybrid
        self.mamba = mamba_mode(self.hybrid) is not None
        self.mla = layout == "mla"
        if self.mla:
            self.total_heads = total_heads = 1
        self.names = names = layer_names(LAYERS)
        self.scheduler = connector(config(role, engine_id, total_heads, self.mla,
                                          tp_size=tp_size, pp_size=pp_size, **extra),
                                   KVConnectorRole.SCHEDULER, self.hybrid, names, tp_size)
        self.workers, self.kv_caches, self.layers = [], [], []  # by worker
        kernel_blocks = num_blocks * (BLOCK_SIZE // KERNEL_BLOCK)
        for stage in range(pp_size):
            held = list(range(stage * LAYERS // pp_size, (stage + 1) * LAYERS // pp_size))
            for rank in range(tp_size):
                worker = connector(config(role, engine_id, total_heads, self.mla, tp_rank=rank,
                                          tp_size=tp_size, pp_rank=stage, pp_size=pp_size,
                                          **extra), KVConnectorRole.WORKER, self.hybrid,
                                   names, tp_size)
                caches = allocate(layout, LAYERS, kernel_blocks, KERNEL_BLOCK,
                                  held_heads(rank, tp_size, total_heads)[1], head_dim, DTYPE,
                                  device)
                if self.mamba:
                    caches = {name: states.state_views(caches[names[i - 1]], tp_size,
                                                       num_blocks) if i % 2 else caches[name]
                              for i, name in enumerate(names)}
                elif hybrid:
                    caches = share_tensors(caches)
                caches = {names[layer]: caches[names[layer]] for layer in held}
                worker.register_kv_caches(caches)
                self.workers.append(worker)
                self.kv_caches.append(caches)
                self.layers.append(held)
        self.scheduler.set_xfer_handshake_metadata_pp_aware(
            {(w // tp_size, w % tp_size): worker.get_handshake_metadata()
             for w, worker in enumerate(self.workers)})
        self.free = list(range(1 if hybrid else 0, num_blocks))  # hybrid: 0 is the null block
        self._finished = {"sending": {}, "recving": {}}  # request -> workers that said so
        self.stats = None  # the workers' get_kv_connector_stats, aggregated over every step

    def allocate(self, count):
        if count > len(self.free):
            raise RuntimeError("out of blocks")
        taken, self.free = self.free[:count], self.free[count:]
        return taken

    def allocate_request(self, count):
        """A request's `count` blocks: a list, or (hybrid) a list per group."""
        return request_blocks(self.allocate, count, BLOCK_SIZE, self.hybrid) if self.hybrid \
            else self.allocate(count)

    def release(self, blocks):
        """Frees a request's blocks (allocate_request's)."""
        self.free.extend(b for b in (sum(blocks, []) if self.hybrid else blocks)
                         if not self.hybrid or b != NULL_BLOCK)

    def _layer_blocks(self, layer, blocks, first_position):
        """(the blocks of `layer`, the request position of the first): the layer's group's
        where the engine is hybrid."""
        if not self.hybrid:
            return blocks, first_position
        group = 0 if layer in layer_groups(LAYERS)[0] else 1
        first = first_position[group] if isinstance(first_position, list) else first_position
        return blocks[group], first

    def addresses(self):
        """The workers' kvx addresses by TP rank (what a push proxy hands the decode)."""
        return [w.get_handshake_metadata().address for w in self.workers]

    def step(self, compute=None, scheduler_output=None):
        """One engine step's connector calls on every worker: (done sending, done receiving,
        failed blocks), a request done once every worker said so (vLLM's aggregation).
        `compute(rank, layer)`, when given, is the forward pass writing layer `layer` of
        worker `rank` just before save_kv_layer is called for it; without it the step
        schedules no tokens and runs no forward (vLLM's kv_connector_no_forward: the same
        connector calls, no layer's). `scheduler_output`: what the step scheduled, as vLLM's
        SchedulerOutput tells it (chunked prefill)."""
        meta = self.scheduler.build_connector_meta(scheduler_output)
        done = {"sending": set(), "recving": set()}
        failed = set()
        worker_meta = None
        for worker, caches in zip(self.workers, self.kv_caches):
            worker.bind_connector_metadata(meta)
            index = self.workers.index(worker)
            for layer, name in zip(self.layers[index], caches if compute is not None else ()):
                if self.is_state(layer):  # a Mamba layer calls no connector hook
                    compute(index, layer)
                    continue
                worker.wait_for_layer_load(name)  # the forward, in forward order
                compute(index, layer)
                worker.save_kv_layer(name, caches[name], None)
            worker.start_load_kv(None)
            worker.wait_for_save()
            said = dict(zip(("sending", "recving"), worker.get_finished(set())))
            failed |= worker.get_block_ids_with_load_errors()
            stats = worker.get_kv_connector_stats()
            if stats is not None:
                self.stats = stats if self.stats is None else self.stats.aggregate(stats)
            mine = worker.build_connector_worker_meta()
            worker_meta = mine if worker_meta is None else worker_meta.aggregate(mine)
            worker.clear_connector_metadata()
            for kind, requests in said.items():
                for request in requests or ():
                    count = self._finished[kind].get(request, 0) + 1
                    self._finished[kind][request] = count
                    if count == len(self.workers):
                        del self._finished[kind][request]
                        done[kind].add(request)
        self.scheduler.update_connector_output(types.SimpleNamespace(
            finished_sending=done["sending"], finished_recving=done["recving"],
            kv_connector_worker_meta=worker_meta))
        return done["sending"], done["recving"], failed

    def has_requests(self):
        """Whether vLLM steps this engine with no request running (Scheduler.has_requests,
        vllm/v1/core/sched/scheduler.py @00f4240: the connector's pending push work)."""
        return self.scheduler.has_pending_push_work()

    def _positions(self, rank, layer, blocks, seed, first_position, only=None):
        """(this worker's [K/V part] views of each block, what each should hold); `only`:
        the request positions to yield (None: all)."""
        tensor = self.kv_caches[rank][self.names[layer]]
        first, count = held_heads(rank % self.tp_size, self.tp_size, self.total_heads)
        per_block = BLOCK_SIZE // KERNEL_BLOCK
        blocks, first_position = self._layer_blocks(layer, blocks, first_position)
        if self.is_state(layer):
            return
        for position, block in enumerate(blocks):
            if self.hybrid and block == NULL_BLOCK or only is not None and position not in only:
                continue
            expected = pattern(seed, layer, first_position + position, self.total_heads,
                               self.bytes_per_head(rank))
            expected = expected[:, first:first + count].reshape(
                per_block, KERNEL_BLOCK, count, -1)
            views = [part[block * per_block:(block + 1) * per_block]
                     for part in parts(tensor, self.layout)]
            width = views[0].shape[-1]
            yield views, [expected[..., i * width:(i + 1) * width] for i in range(len(views))]

    def is_state(self, layer):
        """True for a Mamba layer (the odd ones, with a Mamba group)."""
        return self.mamba and layer in layer_groups(LAYERS)[1]

    def bytes_per_head(self, rank):
        """A token's bytes of one head, K and V (or the MLA latent) together."""
        tensor = list(self.kv_caches[rank].values())[0]
        return sum(p.shape[-1] for p in parts(tensor, self.layout))

    def fill(self, blocks, seed, tokens=None):
        """Writes block position p of the request (every layer, K and V, every head) with its
        pattern, each worker its own heads; a Mamba layer's states with the pattern of
        `tokens` prompt tokens computed."""
        for rank, layers in enumerate(self.layers):
            for layer in layers:
                self.fill_layer(rank, layer, blocks, seed, tokens=tokens)

    def fill_layer(self, rank, layer, blocks, seed, only=None, tokens=None):
        """fill() of one worker's layer (`only`: of those block positions)."""
        if self.is_state(layer):
            states.fill(self.kv_caches[rank][self.names[layer]], blocks[1], seed, layer,
                        tokens, rank % self.tp_size, self.tp_size)
        for views, expected in self._positions(rank, layer, blocks, seed, 0, only):
            for view, values in zip(views, expected):
                view.copy_(torch.from_numpy(np.ascontiguousarray(values)))

    def matches(self, blocks, seed, first_position=0, tokens=None):
        """Whether the request's blocks hold fill()'s patterns (a Mamba layer's states: of
        `tokens` prompt tokens)."""
        for rank, layers in enumerate(self.layers):
            for layer in layers:
                if self.is_state(layer) and not states.matches(
                        self.kv_caches[rank][self.names[layer]], blocks[1], seed, layer,
                        tokens, rank % self.tp_size, self.tp_size):
                    return False
                for views, expected in self._positions(rank, layer, blocks, seed,
                                                       first_position):
                    for view, values in zip(views, expected):
                        if not np.array_equal(view.cpu().numpy(), values):
                            return False
        return True

    def untouched(self):
        """True while every byte of every cache is zero."""
        return all(not t.any() for caches in self.kv_caches for value in caches.values()
                   for t in (value if isinstance(value, list) else [value]))

    def close(self):
        for worker in self.workers:
            worker.shutdown()


def pattern(seed, layer, position, heads, head_bytes):
    """One scheduler block of a layer over all the model's heads: [tokens, heads, bytes]."""
    start = seed * 131 + layer * 17 + position * 3
    values = (np.arange(BLOCK_SIZE * heads * head_bytes, dtype=np.uint64) + start) % 251
    return values.astype(np.uint8).reshape(BLOCK_SIZE, heads, head_bytes)


class FakeStream:
    """A CUDA compute stream as a connector sees it through torch.cuda.Event.query: work runs
    later than it is launched, in order, and an event recorded after some work says done only
    once that work has run. Here the work runs one operation per query of any event, so a
    connector that writes a layer before its event said done sends what was there before."""

    def __init__(self):
        self._queued = []   # work not run yet
        self._ran = 0       # operations run so far
        self._launched = 0

    def launch(self, work):
        self._queued.append(work)
        self._launched += 1

    def event(self):
        """A query of whether the work launched so far has run."""
        mark = self._launched

        def query():
            if self._queued and self._ran < mark:
                self._queued.pop(0)()
                self._ran += 1
            return self._ran >= mark
        return query

    def run_all(self):
        while self._queued:
            self._queued.pop(0)()
            self._ran += 1


def blocks_for(tokens):
    return math.ceil(tokens / BLOCK_SIZE)
