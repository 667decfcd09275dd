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
The states are a Mamba2 layer's (mamba_type "mamba2"), shaped as
MambaStateShapeCalculator.mamba2_state_shape shapes them (vllm/model_executor/layers/mamba/
mamba_utils.py @2afe1e8): the conv state [kernel - 1, (x | B | C) / tp] (the SD layout, the
default), the SSM state [heads / tp, head_dim, d_state]; x holds the rank's heads' channels,
B and C its groups' (n_groups extended to tp where it does not divide, so that each rank
holds whole groups, the one its heads use: rank * n_groups // tp). A state is the shard of
one model-wide pattern of the request's seed, the layer, the block position and how many
prompt tokens were computed into it, so that a state computed from the whole prompt does not
match one of all but its last token (vllm_state_tokens.py), and a shard of the wrong rank or
part does not match either."""
import math
import types

import numpy as np
import torch

SPECULATIVE_BLOCKS = 1
NULL_BLOCK = 0


class MambaSpec(types.SimpleNamespace):
    pass


HEADS, HEAD_DIM, N_GROUPS, D_STATE, KERNEL = 8, 4, 2, 8, 4
INTERMEDIATE = HEADS * HEAD_DIM


def groups_of(tp_size):
    """n_groups as vLLM extends it for `tp_size` (extra_groups_for_head_shards)."""
    return N_GROUPS if N_GROUPS % tp_size == 0 else tp_size


def shapes(tp_size):
    """[(shape, dtype)] of one TP rank's states: the conv state and the SSM state."""
    conv = (INTERMEDIATE + 2 * groups_of(tp_size) * D_STATE) // tp_size
    return [((KERNEL - 1, conv), torch.float16), ((HEADS // tp_size, HEAD_DIM, D_STATE),
                                                   torch.float32)]


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


def _model_states(seed, layer, tokens, position):
    """The model-wide conv state [kernel - 1, x | B | C] and SSM state [heads, ...] of one
    block: small whole numbers, exact in float16."""
    start = seed * 211 + layer * 23 + tokens * 7 + position * 5
    width = INTERMEDIATE + 2 * N_GROUPS * D_STATE
    conv = (np.arange((KERNEL - 1) * width) + start) % 241
    ssm = (np.arange(HEADS * HEAD_DIM * D_STATE) * 3 + start) % 1009
    return conv.reshape(KERNEL - 1, width), ssm.reshape(HEADS, HEAD_DIM, D_STATE)


def _shard(seed, layer, tokens, position, rank, tp_size):
    """Rank `rank`'s conv and SSM states of the block, as numpy arrays of their dtypes."""
    conv, ssm = _model_states(seed, layer, tokens, position)
    x_wide = INTERMEDIATE // tp_size
    held = groups_of(tp_size) // tp_size  # whole groups a rank holds
    first_group = rank * N_GROUPS // tp_size if groups_of(tp_size) != N_GROUPS else rank * held
    b_cols = slice(INTERMEDIATE + first_group * D_STATE,
                   INTERMEDIATE + (first_group + held) * D_STATE)
    c_cols = slice(b_cols.start + N_GROUPS * D_STATE, b_cols.stop + N_GROUPS * D_STATE)
    local_conv = np.concatenate([conv[:, rank * x_wide:(rank + 1) * x_wide], conv[:, b_cols],
                                 conv[:, c_cols]], axis=1).astype(np.float16)
    heads = HEADS // tp_size
    local_ssm = ssm[rank * heads:(rank + 1) * heads].astype(np.float32)
    return local_conv, local_ssm


def fill(views, blocks, seed, layer, tokens, rank, tp_size):
    """Writes each state block of a request with rank `rank`'s shard of its pattern."""
    for position, block in enumerate(b for b in blocks if b != NULL_BLOCK):
        for view, values in zip(views, _shard(seed, layer, tokens, position, rank, tp_size)):
            view[block].copy_(torch.from_numpy(values))


def matches(views, blocks, seed, layer, tokens, rank, tp_size):
    for position, block in enumerate(b for b in blocks if b != NULL_BLOCK):
        for view, values in zip(views, _shard(seed, layer, tokens, position, rank, tp_size)):
            if not np.array_equal(view[block].cpu().numpy(), values):
                return False
    return True


def state_bytes(tp_size):
    """One TP rank's bytes of one state."""
    return sum(math.prod(s) * torch.empty(0, dtype=d).element_size() for s, d in shapes(tp_size))
