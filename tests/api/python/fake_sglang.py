"""Just enough of SGLang for the connector tests: KVArgs over host buffers (one per layer and
K/V, page size 1: one token's K or V per item; two aux buffers of AUX_SLOTS request slots),
filled and checked by page and by slot, and SGLang's DisaggregationMode
(python/sglang/srt/disaggregation/utils.py @0094505), which SGLang hands a backend's manager."""
import enum
import types

import numpy as np

from kvx.integrations.sglang import KvxKVManager

LAYERS, ITEM = 3, 512  # bytes of one token's K (or V) in one layer
AUX_SLOTS, AUX_ITEMS = 16, (8, 24)  # request slots; bytes of a slot in each aux buffer


class Buffers:
    def __init__(self, pages):
        self.pages = pages
        self.arrays = [np.zeros(pages * ITEM, dtype=np.uint8) for _ in range(2 * LAYERS)]
        self.aux = [np.zeros(AUX_SLOTS * item, dtype=np.uint8) for item in AUX_ITEMS]

    def args(self):
        return types.SimpleNamespace(
            engine_rank=0, kv_data_ptrs=[a.ctypes.data for a in self.arrays],
            kv_data_lens=[a.nbytes for a in self.arrays], kv_item_lens=[ITEM] * len(self.arrays),
            aux_data_ptrs=[a.ctypes.data for a in self.aux],
            aux_data_lens=[a.nbytes for a in self.aux], aux_item_lens=list(AUX_ITEMS),
            kv_memory_kind="host", gpu_id=0, page_size=1)

    def fill_aux(self, slot, seed):
        for b, (array, item) in enumerate(zip(self.aux, AUX_ITEMS)):
            array[slot * item:(slot + 1) * item] = pattern(seed, 100 + b, 0)[:item]

    def aux_matches(self, slot, seed):
        return all(np.array_equal(array[slot * item:(slot + 1) * item],
                                  pattern(seed, 100 + b, 0)[:item])
                   for b, (array, item) in enumerate(zip(self.aux, AUX_ITEMS)))

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


class DisaggregationMode(enum.Enum):
    NULL = "null"
    PREFILL = "prefill"
    DECODE = "decode"


def manager(mode, pages, data_path, **options):
    """A manager as SGLang builds one: (kv_args, DisaggregationMode, server_args,
    is_mla_backend); a prefill one needs bootstrap_address (its node's bootstrap server)."""
    buffers = Buffers(pages)
    return buffers, KvxKVManager(buffers.args(), DisaggregationMode(mode), None, False,
                                 data_path=data_path, **options)
