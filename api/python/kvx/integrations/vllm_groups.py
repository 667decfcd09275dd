"""vLLM's KV cache groups as kvx's vLLM connector sees them (vllm.py, vllm_layout.py). With
its hybrid allocator (the connector says SupportsHMA) vLLM keeps one KV cache group per kind
of attention layer, e.g. full attention and sliding window, each with block ids of its own,
and hands a connector a request's blocks as one list per group
(vllm/distributed/kv_transfer/kv_connector/v1/base.py, SupportsHMA.request_finished_all_groups,
and vllm/v1/core/sched/scheduler.py @00024d3). A group of sliding-window layers needs only its
last blocks: as the NIXL connector keeps them (nixl/scheduler.py @053da34), the blocks its
window spans and one more (vLLM marks the blocks before as null ones). A Mamba group holds
each request's recurrent state, not its tokens (MambaSpec in vllm/v1/kv_cache_interface.py
@001cabc): a block is one whole state, and a request holds 1 + num_speculative_blocks of
them (MambaManager in vllm/v1/core/single_type_kv_cache_manager.py @129ab7c; in "align" mode
the blocks before those are null ones), which move whole (vllm_states.py).

Block ids travel as a list per group (`remote_block_ids` in kv_transfer_params is a flat list
where there is one group, as before)."""
import dataclasses
import math


@dataclasses.dataclass(frozen=True)
class Group:
    layers: frozenset   # its layers' names
    keep: int = None    # the last blocks of a request that matter; None: all
    kind: str = "FullAttentionSpec"
    state: bool = False  # a Mamba group: its layers' blocks are whole recurrent states
    mamba_type: str = None  # a Mamba group's MambaSpec.mamba_type ("mamba2", ...)


def is_state(spec):
    """True for a Mamba (state) group's spec."""
    return "Mamba" in type(spec).__name__ or hasattr(spec, "mamba_type")


def kv_cache_groups(kv_cache_config, block_size):
    """The Groups of vLLM's KVCacheConfig where it has several; None for one (every layer,
    all blocks). Raises ValueError, naming the group, for a group kvx cannot move."""
    groups = list(getattr(kv_cache_config, "kv_cache_groups", None) or [])
    if len(groups) == 1 and is_state(groups[0].kv_cache_spec):
        raise ValueError("every layer is a Mamba layer: kvx's vLLM connector moves Mamba state "
                         "beside attention layers (a hybrid model), not a model of state alone")
    if len(groups) <= 1:
        return None
    found = []
    for index, group in enumerate(groups):
        spec = group.kv_cache_spec
        kind = type(spec).__name__
        layers = list(group.layer_names)
        if is_state(spec):  # its block size is the model's length, not the scheduler's
            keep = 1 + int(getattr(spec, "num_speculative_blocks", 0) or 0)
            found.append(Group(frozenset(layers), keep, kind, state=True,
                               mamba_type=getattr(spec, "mamba_type", None)))
            continue
        spec_block = getattr(spec, "block_size", block_size)
        if spec_block != block_size:
            raise ValueError(f"KV cache group {index} ({kind}) has {spec_block}-token blocks, "
                             f"the scheduler {block_size}: kvx moves groups of one block size")
        window = getattr(spec, "sliding_window", None)
        keep = math.ceil(window / block_size) + 1 if window else None
        found.append(Group(frozenset(layers), keep, kind))
    return found


def as_groups(block_ids):
    """A request's block ids as a list per group, from vLLM's tuple of lists, a list of lists
    or a flat list (one group)."""
    block_ids = list(block_ids or [])
    if block_ids and all(isinstance(ids, (list, tuple)) for ids in block_ids):
        return [[int(b) for b in ids] for ids in block_ids]
    return [[int(b) for b in block_ids]]


def flat(block_groups):
    """Every block id of every group (what vLLM takes back as failed blocks)."""
    return [block for ids in block_groups for block in ids]


def clip(block_groups, keep):
    """The blocks of each group that move: the last `keep[g]` of a sliding-window group."""
    return [ids[-limit:] if limit and len(ids) > limit else list(ids)
            for ids, limit in zip(block_groups, keep)]


def wire(block_groups):
    """`remote_block_ids` for kv_transfer_params: flat for one group, else a list per group."""
    return block_groups[0] if len(block_groups) == 1 else block_groups
