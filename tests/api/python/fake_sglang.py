"""Just enough of SGLang for the connector tests: KVArgs over host buffers as SGLang's MHA
token pool lays them out (one buffer per layer and K/V; a page is page_size tokens of the
rank's heads x HEAD_BYTES; heads split over the attention TP ranks as SGLang splits them,
replicated above the model's KV heads), two aux buffers of AUX_SLOTS request slots and, on
request, two state buffer types (a Mamba-like one: one slot per request in each of 2 tensors;
an SWA-like one: pages of its own in each layer), or (state "gdn") a gated delta net's Mamba
state sharded over the attention TP ranks as SGLang's MambaPool holds it (GdnStates), filled
and checked by page, token and head
(with the model's head number in the pattern, so that a head landing in the wrong place
shows), by slot and by state item; the server_args fields a manager reads (tp_size,
dp_size); and SGLang's DisaggregationMode (python/sglang/srt/disaggregation/utils.py
@0094505), which SGLang hands a backend's manager. KVArgs' fields follow
python/sglang/srt/disaggregation/base/conn.py @0094505 (kv_head_num, total_kv_head_num,
page_size, state_types, state_data_ptrs/lens, state_item_lens). The managers listen on
127.0.0.1 unless KVX_TEST_ROUTABLE=1 asks for the node's routable address."""
import enum
import os
import types

import numpy as np

from kvx.integrations.sglang import KvxKVManager

if os.environ.get("KVX_TEST_ROUTABLE") != "1":
    os.environ.setdefault("KVX_SGLANG_HOST", "127.0.0.1")

LAYERS, TOTAL_HEADS, HEAD_BYTES = 3, 4, 128  # TP 1, page size 1: 512 bytes a page
AUX_SLOTS, AUX_ITEMS = 16, (8, 24)  # request slots; bytes of a slot in each aux buffer
STATE_SLOTS, STATE_SLOT_BYTES, STATE_PAGES, STATE_PAGE_BYTES = 8, 96, 64, 64
# A gated delta net (Qwen3-Next's linear attention): key heads, value heads, head dim, conv
# kernel - 1; its conv state's channels are [q | k | v] (two key-heads' and the value heads'
# channels), each split over the ranks on its own (Mamba2StateShape.create with
# conv_shard_groups, python/sglang/srt/configs/mamba_utils.py @02e208d).
GDN_KEY_HEADS, GDN_VALUE_HEADS, GDN_HEAD, GDN_WIDTH = 2, 4, 8, 3
GDN_PARTS = (GDN_KEY_HEADS * GDN_HEAD, GDN_KEY_HEADS * GDN_HEAD, GDN_VALUE_HEADS * GDN_HEAD)


def held_heads(rank, tp_size, total=TOTAL_HEADS):
    """(first, count) of the model's KV heads that attention TP rank `rank` holds."""
    return rank * total // tp_size, max(1, total // tp_size)


class GdnStates:
    """One rank's Mamba state buffers of a gated delta net, per layer a conv state (an item
    [channels / tp, kernel - 1], channels first) and a temporal state ([value heads / tp,
    head, head]), each of STATE_SLOTS request slots, with the KVArgs fields that describe
    their shards (state_dim_per_tensor, state_slice_outer_counts, state_conv_shard_groups);
    one byte an element. A slot holds this rank's shard of one model-wide pattern."""

    def __init__(self, tp_size, rank):
        self.tp_size, self.rank = tp_size, rank
        self.conv_item = sum(GDN_PARTS) // tp_size * GDN_WIDTH
        self.temporal_item = GDN_VALUE_HEADS // tp_size * GDN_HEAD * GDN_HEAD
        self.arrays = ([np.zeros(STATE_SLOTS * self.conv_item, dtype=np.uint8)
                        for _ in range(LAYERS)] +
                       [np.zeros(STATE_SLOTS * self.temporal_item, dtype=np.uint8)
                        for _ in range(LAYERS)])

    def fields(self):
        return dict(
            state_item_lens=[[self.conv_item] * LAYERS + [self.temporal_item] * LAYERS],
            state_dim_per_tensor=[[sum(GDN_PARTS) // self.tp_size] * LAYERS +
                                  [GDN_VALUE_HEADS // self.tp_size] * LAYERS],
            state_slice_outer_counts=[[1] * (2 * LAYERS)],
            state_conv_shard_groups=[[list(GDN_PARTS)] * LAYERS + [None] * LAYERS])

    def _shard(self, tensor, seed):
        layer, temporal = tensor % LAYERS, tensor >= LAYERS
        if temporal:
            whole = pattern(seed, 300 + layer, GDN_VALUE_HEADS * GDN_HEAD * GDN_HEAD)
            heads = GDN_VALUE_HEADS // self.tp_size
            return whole.reshape(GDN_VALUE_HEADS, -1)[self.rank * heads:
                                                      (self.rank + 1) * heads].reshape(-1)
        whole = pattern(seed, 400 + layer, sum(GDN_PARTS) * GDN_WIDTH).reshape(-1, GDN_WIDTH)
        parts, start = [], 0
        for part in GDN_PARTS:
            share = part // self.tp_size
            parts.append(whole[start + self.rank * share:start + (self.rank + 1) * share])
            start += part
        return np.concatenate(parts).reshape(-1)

    def _slot(self, tensor, slot):
        item = self.temporal_item if tensor >= LAYERS else self.conv_item
        return self.arrays[tensor][slot * item:(slot + 1) * item]

    def fill(self, slot, seed):
        for tensor in range(len(self.arrays)):
            self._slot(tensor, slot)[:] = self._shard(tensor, seed)

    def matches(self, slot, seed):
        return all(np.array_equal(self._slot(tensor, slot), self._shard(tensor, seed))
                   for tensor in range(len(self.arrays)))


class Buffers:
    def __init__(self, pages, tp_size=1, rank=0, page_size=1, state=False):
        self.pages, self.tp_size, self.rank, self.page_size = pages, tp_size, rank, page_size
        self.first_head, self.heads = held_heads(rank, tp_size)
        self.item = page_size * self.heads * HEAD_BYTES
        self.arrays = [np.zeros(pages * self.item, dtype=np.uint8) for _ in range(2 * LAYERS)]
        self.aux = [np.zeros(AUX_SLOTS * item, dtype=np.uint8) for item in AUX_ITEMS]
        # [type][tensor]: type 0 one slot a request, type 1 pages of its own per layer.
        self.state = [[np.zeros(STATE_SLOTS * STATE_SLOT_BYTES, dtype=np.uint8)
                       for _ in range(2)],
                      [np.zeros(STATE_PAGES * STATE_PAGE_BYTES, dtype=np.uint8)
                       for _ in range(LAYERS)]] if state else []
        self.gdn = GdnStates(tp_size, rank) if state == "gdn" else None
        if self.gdn:
            self.state = [self.gdn.arrays]

    def args(self):
        state_items = ([[STATE_SLOT_BYTES] * 2, [STATE_PAGE_BYTES] * LAYERS]
                       if self.state else [])
        made = types.SimpleNamespace(
            engine_rank=self.rank, kv_data_ptrs=[a.ctypes.data for a in self.arrays],
            kv_data_lens=[a.nbytes for a in self.arrays],
            kv_item_lens=[self.item] * len(self.arrays),
            aux_data_ptrs=[a.ctypes.data for a in self.aux],
            aux_data_lens=[a.nbytes for a in self.aux], aux_item_lens=list(AUX_ITEMS),
            kv_memory_kind="host", gpu_id=0, page_size=self.page_size, kv_head_num=self.heads,
            total_kv_head_num=TOTAL_HEADS,
            state_types=["mamba", "swa"] if self.state else [],
            state_data_ptrs=[[a.ctypes.data for a in kind] for kind in self.state],
            state_data_lens=[[a.nbytes for a in kind] for kind in self.state],
            state_item_lens=state_items)
        if self.gdn:
            made.state_types = ["mamba"]
            vars(made).update(self.gdn.fields())
        return made

    def state_indices(self, room, decode=False):
        """A request's state items (its slot and, but for "gdn", its 2 SWA pages), on the
        prefill or (other ones) on the decode."""
        slot = (room + (3 if decode else 0)) % STATE_SLOTS
        if self.gdn:
            return [[slot]]
        first = 2 * room + (7 if decode else 0)
        return [[slot], [first % STATE_PAGES, (first + 1) % STATE_PAGES]]

    def server_args(self):
        return types.SimpleNamespace(tp_size=self.tp_size, dp_size=1, pp_size=1,
                                     enable_dp_attention=False, kv_cache_dtype="auto")

    def _page(self, buffer, page):
        return self.arrays[buffer][page * self.item:(page + 1) * self.item].reshape(
            self.page_size, self.heads, HEAD_BYTES)

    def fill(self, pages, seed):
        for b in range(len(self.arrays)):
            for position, page in enumerate(pages):
                self._page(b, page)[:] = page_pattern(seed, b, position, self.page_size,
                                                      self.first_head, self.heads)

    def matches(self, pages, seed):
        return all(np.array_equal(self._page(b, page),
                                  page_pattern(seed, b, position, self.page_size,
                                               self.first_head, self.heads))
                   for b in range(len(self.arrays)) for position, page in enumerate(pages))

    def fill_aux(self, slot, seed):
        for b, (array, item) in enumerate(zip(self.aux, AUX_ITEMS)):
            array[slot * item:(slot + 1) * item] = pattern(seed, 100 + b, item)

    def aux_matches(self, slot, seed):
        return all(np.array_equal(array[slot * item:(slot + 1) * item],
                                  pattern(seed, 100 + b, item))
                   for b, (array, item) in enumerate(zip(self.aux, AUX_ITEMS)))

    def _state_item(self, kind, tensor, index):
        item = (STATE_SLOT_BYTES, STATE_PAGE_BYTES)[kind]
        return self.state[kind][tensor][index * item:(index + 1) * item]

    def fill_state(self, indices, seed):
        """`indices`: per state type, the request's items (its slot, its SWA pages)."""
        if self.gdn:
            return self.gdn.fill(indices[0][0], seed)
        for kind, items in enumerate(indices):
            for tensor in range(len(self.state[kind])):
                for position, index in enumerate(items):
                    item = self._state_item(kind, tensor, index)
                    item[:] = pattern(seed, 200 + 10 * kind + tensor + position, item.size)

    def state_matches(self, indices, seed):
        if self.gdn:
            return self.gdn.matches(indices[0][0], seed)
        return all(np.array_equal(self._state_item(kind, tensor, index),
                                  pattern(seed, 200 + 10 * kind + tensor + position,
                                          self._state_item(kind, tensor, index).size))
                   for kind, items in enumerate(indices)
                   for tensor in range(len(self.state[kind]))
                   for position, index in enumerate(items))


def pattern(seed, salt, size):
    return ((np.arange(size, dtype=np.uint64) + seed * 37 + salt * 11) % 253).astype(np.uint8)


def page_pattern(seed, buffer, position, page_size, first_head, heads):
    """[page_size, heads, HEAD_BYTES] of the request's page `position` in `buffer`: the
    bytes of each token and model head."""
    token = np.arange(page_size, dtype=np.uint64)[:, None, None]
    head = np.arange(first_head, first_head + heads, dtype=np.uint64)[None, :, None]
    byte = np.arange(HEAD_BYTES, dtype=np.uint64)[None, None, :]
    start = seed * 37 + buffer * 11 + position * 5
    return ((byte + start + token * 3 + head * 7) % 253).astype(np.uint8)


class DisaggregationMode(enum.Enum):
    NULL = "null"
    PREFILL = "prefill"
    DECODE = "decode"


def manager(mode, pages, data_path, tp_size=1, rank=0, page_size=1, state=False, **options):
    """A manager as SGLang builds one: (kv_args, DisaggregationMode, server_args,
    is_mla_backend); a prefill one needs bootstrap_address (its node's bootstrap server)."""
    buffers = Buffers(pages, tp_size, rank, page_size, state)
    return buffers, KvxKVManager(buffers.args(), DisaggregationMode(mode), buffers.server_args(),
                                 False, data_path=data_path, **options)
