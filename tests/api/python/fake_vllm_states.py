"""Mamba layers for the vLLM connector tests (fake_vllm.Engine(hybrid="mamba" or
"mamba-align")), as vLLM lays them out, facts from upstream vLLM (vllm-project/vllm):

  - a hybrid model's Mamba layers are a KV cache group of their own (MambaSpec: shapes,
    dtypes, mamba_type, mamba_cache_mode, num_speculative_blocks;
    vllm/v1/kv_cache_interface.py @001cabc);
  - each Mamba layer shares its buffer with an attention layer (one tensor pooled across the
    groups, one page a block), and what register_kv_caches gets for it is the list of its
    state tensors, each an as_strided view of that buffer: [blocks, *shape] with the page
    as block stride, the states one after the other inside the page
    (GPUModelRunner._reshape_kv_cache_tensors, vllm/v1/worker/gpu_model_runner.py
    @4e17906);
  - a request holds 1 + num_speculative_blocks state blocks; in "align" mode its block list
    for the group is one entry per block of tokens plus those, every entry before the last
    1 + num_speculative_blocks the null block (MambaManager,
    vllm/v1/core/single_type_kv_cache_manager.py @129ab7c);
  - Mamba layers call no connector hook in the forward (no wait_for_layer_load, no
    save_kv_layer: only vLLM's attention layers do).
A state here is a pattern of the request's seed, the layer, the block position and how many
prompt tokens were computed into it, so that a state computed from the whole prompt does not
match one of all but its last token (vllm_state_tokens.py)."""
import math
import types

import numpy as np
import torch

SPECULATIVE_BLOCKS = 1
NULL_BLOCK = 0


class MambaSpec(types.SimpleNamespace):
    pass


def shapes(tp_size):
    """[(shape, dtype)] of one TP rank's states: a conv state and an SSM state, each split over
    the ranks."""
    return [((3, 128 // tp_size), torch.float16), ((8 // tp_size, 16, 8), torch.float32)]


def spec(tp_size, mode, block_size):
    states = shapes(tp_size)
    return MambaSpec(shapes=tuple(s for s, _ in states), dtypes=tuple(d for _, d in states),
                     page_size_padded=None, mamba_type="mamba2", mamba_cache_mode=mode,
                     num_speculative_blocks=SPECULATIVE_BLOCKS, block_size=block_size)


def state_views(attention, tp_size, num_blocks):
    """The state tensors of a Mamba layer on the buffer of the attention layer `attention`
    (a view of a whole buffer of its own, of `num_blocks` scheduler blocks: a layout of one
    buffer a layer, as vLLM's KVCacheTensor shared by one layer of each group)."""
    storage = attention.untyped_storage() if hasattr(attention, "untyped_storage") else \
        attention.storage()
    assert storage.nbytes() == attention.numel() * attention.element_size(), \
        "a Mamba layer shares a buffer of one attention layer alone"
    whole = torch.as_strided(attention, (attention.numel(),), (1,), 0).view(torch.int8)
    page = whole.numel() // num_blocks
    views, offset = [], 0
    for shape, dtype in shapes(tp_size):
        element = torch.empty(0, dtype=dtype).element_size()
        inner = [math.prod(shape[i + 1:]) for i in range(len(shape))]
        views.append(torch.as_strided(whole.view(dtype), (num_blocks, *shape),
                                      (page // element, *inner), offset // element))
        offset += math.prod(shape) * element
    assert offset <= page, "the states must fit a page"
    return views


def request_blocks(allocate, count, mode):
    """A request's Mamba group blocks for `count` blocks of tokens."""
    kept = 1 + SPECULATIVE_BLOCKS
    return ([NULL_BLOCK] * (count - 1) if mode == "align" else []) + allocate(kept)


def pattern(seed, layer, tokens, position, nbytes):
    start = seed * 211 + layer * 23 + tokens * 7 + position * 5
    return ((np.arange(nbytes, dtype=np.uint64) + start) % 241).astype(np.uint8)


def _block_bytes(views, block):
    return [view[block].view(torch.uint8).reshape(-1) for view in views]


def fill(views, blocks, seed, layer, tokens):
    """Writes each state block of a request with its pattern."""
    for position, block in enumerate(b for b in blocks if b != NULL_BLOCK):
        parts = _block_bytes(views, block)
        values = pattern(seed, layer, tokens, position, sum(p.numel() for p in parts))
        start = 0
        for part in parts:
            part.copy_(torch.from_numpy(values[start:start + part.numel()]))
            start += part.numel()


def matches(views, blocks, seed, layer, tokens):
    for position, block in enumerate(b for b in blocks if b != NULL_BLOCK):
        held = np.concatenate([p.cpu().numpy() for p in _block_bytes(views, block)])
        if not np.array_equal(held, pattern(seed, layer, tokens, position, held.size)):
            return False
    return True


def state_bytes(tp_size):
    """One TP rank's bytes of one state."""
    return sum(math.prod(s) * torch.empty(0, dtype=d).element_size() for s, d in shapes(tp_size))
