"""Just enough of SGLang for the connector tests: KVArgs over host buffers (one per layer and
K/V, page size 1: one token's K or V per item), filled and checked by page."""
import types

import numpy as np

from kvx.integrations.sglang import KvxKVManager

LAYERS, ITEM = 3, 512  # bytes of one token's K (or V) in one layer


class Buffers:
    def __init__(self, pages):
        self.pages = pages
        self.arrays = [np.zeros(pages * ITEM, dtype=np.uint8) for _ in range(2 * LAYERS)]

    def args(self):
        return types.SimpleNamespace(
            engine_rank=0, kv_data_ptrs=[a.ctypes.data for a in self.arrays],
            kv_data_lens=[a.nbytes for a in self.arrays], kv_item_lens=[ITEM] * len(self.arrays),
            kv_memory_kind="host", gpu_id=0, page_size=1)

    def fill(self, pages, seed):
        for b, array in enumerate(self.arrays):
            for position, page in enumerate(pages):
                array[page * ITEM:(page + 1) * ITEM] = pattern(seed, b, position)

    def matches(self, pages, seed):
        return all(np.array_equal(array[page * ITEM:(page + 1) * ITEM], pattern(seed, b, position))
                   for b, array in enumerate(self.arrays) for position, page in enumerate(pages))


def pattern(seed, buffer, position):
    start = seed * 37 + buffer * 11 + position * 5
    return ((np.arange(ITEM, dtype=np.uint64) + start) % 253).astype(np.uint8)


def manager(mode, pages, data_path):
    buffers = Buffers(pages)
    return buffers, KvxKVManager(buffers.args(), mode, data_path=data_path)
