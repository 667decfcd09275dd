"""Just enough of vLLM for the connector tests to drive kvx's connector in the order vLLM calls
it (vLLM itself cannot be installed here): requests, allocated blocks, configs, a block pool,
KV cache tensors of vLLM's shape, and one engine step of the connector calls."""
import math
import types

import numpy as np
import torch

from kvx.integrations.vllm import KvxConnector, KVConnectorRole

LAYERS, BLOCK_SIZE, HEADS, HEAD_DIM = 4, 16, 2, 32
DTYPE = torch.float16


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
    """One vLLM instance with one worker: a scheduler-side and a worker-side connector, KV
    caches of `num_blocks` blocks per layer, and a free list of blocks."""

    def __init__(self, role, engine_id, num_blocks, **extra):
        cfg = config(role, engine_id, **extra)
        self.scheduler = KvxConnector(cfg, KVConnectorRole.SCHEDULER)
        self.worker = KvxConnector(cfg, KVConnectorRole.WORKER)
        self.kv_caches = {f"model.layers.{i}.self_attn": torch.zeros(
            (2, num_blocks, BLOCK_SIZE, HEADS, HEAD_DIM), dtype=DTYPE) for i in range(LAYERS)}
        self.worker.register_kv_caches(self.kv_caches)
        self.scheduler.set_xfer_handshake_metadata({0: self.worker.get_handshake_metadata()})
        self.free = list(range(num_blocks))

    def allocate(self, count):
        if count > len(self.free):
            raise RuntimeError("out of blocks")
        taken, self.free = self.free[:count], self.free[count:]
        return taken

    def step(self):
        """One engine step's connector calls: (done sending, done receiving, failed blocks)."""
        meta = self.scheduler.build_connector_meta(None)
        self.worker.bind_connector_metadata(meta)
        self.worker.start_load_kv(None)
        for name in sorted(self.kv_caches):
            self.worker.wait_for_layer_load(name)
            self.worker.save_kv_layer(name, self.kv_caches[name], None)
        self.worker.wait_for_save()
        sending, recving = self.worker.get_finished(set())
        failed = self.worker.get_block_ids_with_load_errors()
        self.worker.clear_connector_metadata()
        return sending or set(), recving or set(), failed

    def fill(self, blocks, seed):
        """Writes block position p of the request (every layer, K and V) with its pattern."""
        for layer, name in enumerate(sorted(self.kv_caches)):
            raw = self.kv_caches[name].view(2, -1).view(torch.uint8)
            per_block = raw.shape[1] // self.kv_caches[name].shape[1]
            for kv in range(2):
                for position, block in enumerate(blocks):
                    raw[kv, block * per_block:(block + 1) * per_block] = torch.from_numpy(
                        pattern(seed, layer, kv, position, per_block))

    def matches(self, blocks, seed, first_position=0):
        for layer, name in enumerate(sorted(self.kv_caches)):
            raw = self.kv_caches[name].view(2, -1).view(torch.uint8).numpy()
            per_block = raw.shape[1] // self.kv_caches[name].shape[1]
            for kv in range(2):
                for i, block in enumerate(blocks):
                    expected = pattern(seed, layer, kv, first_position + i, per_block)
                    if not np.array_equal(raw[kv, block * per_block:(block + 1) * per_block],
                                          expected):
                        return False
        return True

    def close(self):
        self.worker.shutdown()


def pattern(seed, layer, kv, position, nbytes):
    start = seed * 131 + layer * 17 + kv * 7 + position * 3
    return ((np.arange(nbytes, dtype=np.uint64) + start) % 251).astype(np.uint8)


def blocks_for(tokens):
    return math.ceil(tokens / BLOCK_SIZE)
