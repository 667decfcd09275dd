"""Where vLLM's paged KV cache blocks are, as kvx descriptor lists.

vLLM hands a worker one tensor per attention layer, [2, num_blocks, block_size, kv_heads,
head_dim] (K then V), kv_heads being this worker's share of the model's heads under tensor
parallelism. A list made here has E entries per (layer, K/V, block), at index
((layer * 2 + kv) * num_blocks + block) * E + e: one entry for the whole block (E = 1) when
all of its heads move, else one per token (E = block_size), each covering a range of heads
of that token (contiguous within the token). Both sides build lists the same way with their
own num_blocks and heads, so that entry i of one pairs with entry i of the other."""
import numpy as np

import kvx


class KvLayout:
    """The layers of one worker's KV cache, in the order both sides agree on (layer names
    sorted), and lists of their blocks."""

    def __init__(self, kv_caches, tp_size=1):
        if not kv_caches:
            raise ValueError("no KV cache tensors to register")
        self.names = sorted(kv_caches)
        first = kv_caches[self.names[0]]
        self.shape = tuple(first.shape)
        if len(self.shape) != 5 or self.shape[0] != 2:
            raise ValueError(f"a KV cache layer must be [2, num_blocks, block_size, kv_heads, "
                             f"head_dim], not {list(self.shape)}")
        for name in self.names:
            t = kv_caches[name]
            if tuple(t.shape) != self.shape or t.dtype != first.dtype:
                raise ValueError(f"layer {name} is {list(t.shape)} {t.dtype}, layer "
                                 f"{self.names[0]} {list(self.shape)} {first.dtype}: every "
                                 "layer must have the same shape and type")
        _, self.num_blocks, self.block_size, self.heads, head_dim = self.shape
        self.head_bytes = head_dim * first.element_size()
        self.block_bytes = self.block_size * self.heads * self.head_bytes
        self.dtype = str(first.dtype)
        self.tp_size = tp_size

    def describe(self):
        """This worker's cache, as its handshake describes it."""
        return {"layers": len(self.names), "block_size": self.block_size,
                "head_bytes": self.head_bytes, "dtype": self.dtype, "heads": self.heads,
                "tp_size": self.tp_size, "num_blocks": self.num_blocks}

    def ranges(self, regions, num_blocks=None, heads=None, first_head=0, head_count=None,
               per_token=False):
        """uint64 rows (region, offset, length) for every (layer, K/V, block) of a cache with
        `heads` heads per token (this one's unless given; the peer's for a remote list): one
        row a block, or with `per_token` one row per token of heads [first_head, first_head +
        head_count)."""
        num_blocks = self.num_blocks if num_blocks is None else num_blocks
        heads = self.heads if heads is None else heads
        head_count = heads - first_head if head_count is None else head_count
        block_bytes = self.block_size * heads * self.head_bytes
        whole = not per_token
        if whole and (first_head != 0 or head_count != heads):
            raise ValueError("a list of whole blocks covers every head")
        per_block = 1 if whole else self.block_size
        blocks = np.arange(2 * num_blocks, dtype=np.uint64)
        if whole:
            offsets = blocks * block_bytes
            length = block_bytes
        else:
            token = np.arange(self.block_size, dtype=np.uint64) * heads * self.head_bytes
            offsets = (blocks[:, None] * block_bytes + token[None, :] +
                       first_head * self.head_bytes).reshape(-1)
            length = head_count * self.head_bytes
        per_layer = 2 * num_blocks * per_block
        table = np.zeros((len(regions) * per_layer, 3), dtype=np.uint64)
        for i, region in enumerate(regions):
            rows = table[i * per_layer:(i + 1) * per_layer]
            rows[:, 0] = region
            rows[:, 1] = offsets
            rows[:, 2] = length
        return table

    def indices(self, blocks, num_blocks=None, per_block=1, layers=None):
        """uint32 list indices of `blocks` in every layer (or those numbered in `layers`), K
        and V (layer-major), for a list with `per_block` entries a block."""
        num_blocks = self.num_blocks if num_blocks is None else num_blocks
        blocks = np.asarray(blocks, dtype=np.uint32)
        layers = np.arange(len(self.names), dtype=np.uint32) if layers is None \
            else np.asarray(layers, dtype=np.uint32)
        rows = (layers[:, None] * 2 + np.arange(2, dtype=np.uint32)[None, :]).reshape(-1)
        base = (rows * num_blocks)[:, None]
        first = ((base + blocks[None, :]) * per_block).reshape(-1)
        entries = np.arange(per_block, dtype=np.uint32)
        return (first[:, None] + entries[None, :]).reshape(-1).astype(np.uint32)


def check_compatible(mine, theirs):
    """Raises kvx.InvalidArgument unless two workers' caches (KvLayout.describe) can move
    blocks between them: the same layers, block size, head size and type, and the same heads
    over all TP ranks (each may split them differently)."""
    if not theirs:
        raise kvx.InvalidArgument("the other instance's KV cache layout is not known")
    for key in ("layers", "block_size", "head_bytes", "dtype"):
        if mine[key] != theirs.get(key):
            raise kvx.InvalidArgument(f"KV caches differ in {key}: {mine[key]} here, "
                                      f"{theirs.get(key)} there")
    here, there = mine["heads"] * mine["tp_size"], theirs["heads"] * theirs["tp_size"]
    if here != there:
        raise kvx.InvalidArgument(f"KV caches differ in their heads over all TP ranks: {here} "
                                  f"here, {there} there")


def head_overlaps(my_rank, my_tp, peer_tp, heads_total):
    """For a decode rank: the prefill ranks holding some of its heads, and for each
    (prefill rank, first local head here, first head there, count)."""
    mine = heads_total // my_tp
    theirs = heads_total // peer_tp
    lo, hi = my_rank * mine, (my_rank + 1) * mine
    out = []
    for rank in range(peer_tp):
        p_lo, p_hi = rank * theirs, (rank + 1) * theirs
        start, end = max(lo, p_lo), min(hi, p_hi)
        if start < end:
            out.append((rank, start - lo, start - p_lo, end - start))
    return out


def readers_per_prefill_rank(decode_tp, prefill_tp):
    """How many decode ranks read from each prefill rank (each sends it one notification)."""
    return max(1, decode_tp // prefill_tp)
