"""vLLM's hybrid KV cache groups for the connector tests (fake_vllm.Engine(hybrid=True)), as
vLLM's hybrid allocator hands them out (vllm/v1/core/kv_cache_manager.py and the KV cache
specs in vllm/v1/kv_cache_interface.py, at 003df29): the even layers full attention (group
0), the odd ones sliding window of WINDOW tokens (group 1); a layer of group 1 shares its
tensor with the layer before it (vLLM pools one tensor across the groups, and the groups' block
ids, from one pool, never meet); a request's blocks a list per group, the sliding window
group's blocks before its window the null block (id NULL_BLOCK), which KVCacheBlocks leaves
out of get_unhashed_block_ids_all_groups. With kind "mamba" or "mamba-align" group 1 is a
Mamba group instead (fake_vllm_states.py)."""
import math
import types

import fake_vllm_states as states

WINDOW = 48           # tokens of the sliding window
NULL_BLOCK = 0        # vLLM's null block (BlockPool.null_block)


class FullAttentionSpec(types.SimpleNamespace):
    pass


class SlidingWindowSpec(types.SimpleNamespace):
    pass


def layer_groups(layers):
    """The layer numbers of each group."""
    return [list(range(0, layers, 2)), list(range(1, layers, 2))]


def mamba_mode(kind):
    """vLLM's mamba_cache_mode of a hybrid `kind`; None for a sliding window group."""
    return {"mamba": "none", "mamba-align": "align"}.get(kind)


def kv_cache_config(names, block_size, kind="sliding", tp_size=1):
    """vLLM's KVCacheConfig as a connector reads it (kv_cache_groups), for layers `names`
    (in forward order)."""
    full, other = layer_groups(len(names))
    mode = mamba_mode(kind)
    second = SlidingWindowSpec(block_size=block_size, sliding_window=WINDOW) if mode is None \
        else states.spec(tp_size, mode, block_size if mode == "align" else 4096)
    return types.SimpleNamespace(kv_cache_groups=[
        types.SimpleNamespace(layer_names=[names[i] for i in full],
                              kv_cache_spec=FullAttentionSpec(block_size=block_size)),
        types.SimpleNamespace(layer_names=[names[i] for i in other], kv_cache_spec=second)])


def share_tensors(caches):
    """`caches` (name -> tensor, forward order) with each odd layer on its even neighbour's
    tensor."""
    names = list(caches)
    return {name: caches[names[i - i % 2]] for i, name in enumerate(names)}


def window_blocks(block_size):
    """The blocks a sliding window group keeps of a request: those its window spans, and one
    more (what the NIXL connector keeps, nixl/scheduler.py @053da34)."""
    return math.ceil(WINDOW / block_size) + 1


def request_blocks(allocate, count, block_size, kind="sliding"):
    """A request's blocks, a list per group: `count` for full attention; for the sliding
    window the null block before its last window_blocks(); a Mamba group's as
    fake_vllm_states.request_blocks."""
    if mamba_mode(kind) is not None:
        return [allocate(count), states.request_blocks(allocate, count, mamba_mode(kind))]
    kept = min(count, window_blocks(block_size))
    return [allocate(count), [NULL_BLOCK] * (count - kept) + allocate(kept)]


class GroupBlocks:
    """vLLM's KVCacheBlocks with several groups, as the connector sees it: `new`, per group,
    the blocks to load into (a prefix hit's are not among them)."""

    def __init__(self, block_ids, new=None):
        self._ids = [list(ids) for ids in block_ids]
        self._new = [list(ids) for ids in (block_ids if new is None else new)]

    def get_block_ids(self):
        return tuple(self._ids)

    def get_unhashed_block_ids(self):
        raise AssertionError("KVCacheBlocks.get_unhashed_block_ids: only one group allowed")

    def get_unhashed_block_ids_all_groups(self):
        return [[b for b in ids if b != NULL_BLOCK] for ids in self._new]
