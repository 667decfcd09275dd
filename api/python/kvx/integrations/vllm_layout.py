"""Where vLLM's paged KV cache blocks are, as kvx descriptor lists.

vLLM hands a worker one tensor per attention layer, [2, num_blocks, block_size, kv_heads,
head_dim] (K then V). Entry (layer, kv, block) of a list is then one contiguous range of
block_size * kv_heads * head_dim elements; its index in the list is
(layer * 2 + kv) * num_blocks + block, on each side with that side's own num_blocks."""
import numpy as np


class KvLayout:
    """The layers of one worker's KV cache, in the order both sides agree on (layer names
    sorted), and the lists of their blocks."""

    def __init__(self, kv_caches):
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
        self.num_blocks = self.shape[1]
        self.block_bytes = int(np.prod(self.shape[2:])) * first.element_size()
        self.dtype = str(first.dtype)

    def describe(self):
        """What the peer must agree with (sent in the handshake)."""
        return {"layers": len(self.names), "block_shape": list(self.shape[2:]),
                "dtype": self.dtype, "num_blocks": self.num_blocks}

    def check_peer(self, peer):
        mine = self.describe()
        for key in ("layers", "block_shape", "dtype"):
            if peer.get(key) != mine[key]:
                raise ValueError(f"the peer's KV cache differs in {key}: {peer.get(key)} there, "
                                 f"{mine[key]} here")

    def ranges(self, regions, num_blocks=None):
        """uint64 rows (region, offset, length) for every (layer, kv, block); `regions` are the
        layers' region ids in self.names order (the peer's, for a remote list)."""
        num_blocks = self.num_blocks if num_blocks is None else num_blocks
        per_layer = 2 * num_blocks
        table = np.zeros((len(regions) * per_layer, 3), dtype=np.uint64)
        for i, region in enumerate(regions):
            rows = table[i * per_layer:(i + 1) * per_layer]
            rows[:, 0] = region
            rows[:, 1] = np.arange(per_layer, dtype=np.uint64) * self.block_bytes
            rows[:, 2] = self.block_bytes
        return table

    def indices(self, blocks, num_blocks=None):
        """uint32 list indices of `blocks` in every layer, K and V: layer-major."""
        num_blocks = self.num_blocks if num_blocks is None else num_blocks
        blocks = np.asarray(blocks, dtype=np.uint32)
        layers = len(self.names)
        base = (np.arange(layers * 2, dtype=np.uint32) * num_blocks)[:, None]
        return (base + blocks[None, :]).reshape(-1).astype(np.uint32)
