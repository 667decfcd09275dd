"""Just enough of vLLM for the connector tests to drive kvx's connector in the order vLLM calls
it (vLLM itself cannot be installed here): requests, allocated blocks, configs, a block pool,
KV cache tensors of vLLM's shape, and one engine step of the connector calls."""
import math
import types

import numpy as np
import torch

from kvx.integrations.vllm import KvxConnector, KVConnectorRole

LAYERS, BLOCK_SIZE, HEADS, HEAD_DIM = 4, 16, 4, 32  # HEADS: the model's, over all TP ranks
DTYPE = torch.float16
HEAD_BYTES = HEAD_DIM * 2


class Request:
    def __init__(self, request_id, num_tokens, kv_transfer_params=None):
        self.request_id = request_id
        self.prompt_token_ids = list(range(num_tokens))
        self.kv_transfer_params = kv_transfer_params


class Blocks:
    """vLLM's KVCacheBlocks, as the connector sees it."""

    def __init__(self, block_ids, unhashed=None):
        self._ids = list(block_ids)
        self._unhashed = list(block_ids if unhashed is None else unhashed)

    def get_block_ids(self):
        return (self._ids,)

    def get_unhashed_block_ids(self):
        return self._unhashed


def config(role, engine_id, **extra):
    transfer = types.SimpleNamespace(kv_role=role, engine_id=engine_id,
                                     kv_connector_extra_config=extra)
    return types.SimpleNamespace(kv_transfer_config=transfer,
                                 cache_config=types.SimpleNamespace(block_size=BLOCK_SIZE))


class Engine:
    """One vLLM instance: a scheduler-side connector and `tp_size` workers, each with its
    worker-side connector and its share of the heads in KV caches of `num_blocks` blocks per
    layer; block ids (one free list) are shared by the workers, as in vLLM."""

    def __init__(self, role, engine_id, num_blocks, tp_size=1, head_dim=HEAD_DIM, **extra):
        self.tp_size = tp_size
        self.scheduler = KvxConnector(config(role, engine_id, tp_size=tp_size, **extra),
                                      KVConnectorRole.SCHEDULER)
        self.workers, self.kv_caches = [], []
        for rank in range(tp_size):
            worker = KvxConnector(config(role, engine_id, tp_rank=rank, tp_size=tp_size, **extra),
                                  KVConnectorRole.WORKER)
            caches = {f"model.layers.{i}.self_attn": torch.zeros(
                (2, num_blocks, BLOCK_SIZE, HEADS // tp_size, head_dim), dtype=DTYPE)
                for i in range(LAYERS)}
            worker.register_kv_caches(caches)
            self.workers.append(worker)
            self.kv_caches.append(caches)
        self.scheduler.set_xfer_handshake_metadata(
            {rank: w.get_handshake_metadata() for rank, w in enumerate(self.workers)})
        self.free = list(range(num_blocks))
        self._finished = {"sending": {}, "recving": {}}  # request -> workers that said so

    def allocate(self, count):
        if count > len(self.free):
            raise RuntimeError("out of blocks")
        taken, self.free = self.free[:count], self.free[count:]
        return taken

    def addresses(self):
        """The workers' kvx addresses by TP rank (what a push proxy hands the decode)."""
        return [w.get_handshake_metadata().address for w in self.workers]

    def step(self, compute=None):
        """One engine step's connector calls on every worker: (done sending, done receiving,
        failed blocks), a request done once every worker said so (vLLM's aggregation).
        `compute(rank, layer)`, when given, is the forward pass writing layer `layer` of
        worker `rank` just before save_kv_layer is called for it."""
        meta = self.scheduler.build_connector_meta(None)
        done = {"sending": set(), "recving": set()}
        failed = set()
        for worker, caches in zip(self.workers, self.kv_caches):
            worker.bind_connector_metadata(meta)
            worker.start_load_kv(None)
            for layer, name in enumerate(sorted(caches)):
                worker.wait_for_layer_load(name)
                if compute is not None:
                    compute(self.workers.index(worker), layer)
                worker.save_kv_layer(name, caches[name], None)
            worker.wait_for_save()
            said = dict(zip(("sending", "recving"), worker.get_finished(set())))
            failed |= worker.get_block_ids_with_load_errors()
            worker.clear_connector_metadata()
            for kind, requests in said.items():
                for request in requests or ():
                    count = self._finished[kind].get(request, 0) + 1
                    self._finished[kind][request] = count
                    if count == self.tp_size:
                        del self._finished[kind][request]
                        done[kind].add(request)
        return done["sending"], done["recving"], failed

    def _blocks_view(self, rank, name):
        """[2, num_blocks, block_size, heads here, head bytes] as uint8."""
        t = self.kv_caches[rank][name]
        return t.view(torch.uint8).reshape(*t.shape[:4], HEAD_BYTES).numpy()

    def fill(self, blocks, seed):
        """Writes block position p of the request (every layer, K and V, every head) with its
        pattern, each worker its own heads."""
        for rank in range(self.tp_size):
            for layer in range(LAYERS):
                self.fill_layer(rank, layer, blocks, seed)

    def fill_layer(self, rank, layer, blocks, seed):
        """fill() of one worker's layer."""
        heads = HEADS // self.tp_size
        view = self._blocks_view(rank, sorted(self.kv_caches[rank])[layer])
        for kv in range(2):
            for position, block in enumerate(blocks):
                view[kv, block] = pattern(seed, layer, kv, position)[
                    :, rank * heads:(rank + 1) * heads]

    def matches(self, blocks, seed, first_position=0):
        heads = HEADS // self.tp_size
        for rank in range(self.tp_size):
            for layer, name in enumerate(sorted(self.kv_caches[rank])):
                view = self._blocks_view(rank, name)
                for kv in range(2):
                    for i, block in enumerate(blocks):
                        expected = pattern(seed, layer, kv, first_position + i)[
                            :, rank * heads:(rank + 1) * heads]
                        if not np.array_equal(view[kv, block], expected):
                            return False
        return True

    def close(self):
        for worker in self.workers:
            worker.shutdown()


def pattern(seed, layer, kv, position):
    """One block's K (or V) over all the model's heads: [block_size, HEADS, head bytes]."""
    start = seed * 131 + layer * 17 + kv * 7 + position * 3
    values = (np.arange(BLOCK_SIZE * HEADS * HEAD_BYTES, dtype=np.uint64) + start) % 251
    return values.astype(np.uint8).reshape(BLOCK_SIZE, HEADS, HEAD_BYTES)


def blocks_for(tokens):
    return math.ceil(tokens / BLOCK_SIZE)
