"""Which bytes of SGLang's Mamba state items move between attention TP sizes (sglang.py).

SGLang's KVArgs describe each state tensor's item (one request slot of one layer's conv or
temporal state) along the axis TP splits: `state_dim_per_tensor` (that axis's size on this
rank), `state_slice_outer_counts` (rows before it in the item; 1 where it is outermost) and
`state_conv_shard_groups` (a conv state's parts along it at full size, each split over the
ranks on its own: a gated delta net's [q | k | v]; None where the axis is one part), the
fields its Mooncake backend slices by (disaggregation/mooncake/conn.py @0005973). From them
each tensor is a state_slices.Sharding, and a decode rank's item is assembled from the
prefill ranks' pieces of it. Only Mamba state types are described so: the others (SWA, DSA
pages) move between equal TP sizes, as in SGLang."""
import kvx
from kvx.integrations.state_slices import Sharding


def _is_mamba(state_type):
    return "mamba" in str(getattr(state_type, "value", state_type)).lower()


def _at(table, kind, tensor):
    try:
        return table[kind][tensor]
    except (IndexError, KeyError, TypeError):
        return None


def of(args, attn_tp):
    """Per state type of `args` (SGLang's KVArgs), a tuple of Sharding by tensor, or None
    where the type is not a Mamba one or its tensors are not described."""
    dims = getattr(args, "state_dim_per_tensor", None) or []
    outer = getattr(args, "state_slice_outer_counts", None) or []
    groups = getattr(args, "state_conv_shard_groups", None) or []
    found = []
    for kind, (state_type, items) in enumerate(zip(getattr(args, "state_types", None) or [],
                                                   getattr(args, "state_item_lens", None)
                                                   or [])):
        shards = []
        for tensor, item in enumerate(items):
            dim, rows = _at(dims, kind, tensor), _at(outer, kind, tensor) or 1
            parts = _at(groups, kind, tensor)
            if not _is_mamba(state_type) or not dim or item % (rows * dim):
                shards = None
                break
            if parts and sum(parts) == dim * attn_tp and all(p % attn_tp == 0 for p in parts):
                pieces = tuple(p // attn_tp for p in parts)
            else:
                pieces = (dim,)
            shards.append(Sharding(0, rows, item // (rows * dim), pieces))
        found.append(None if shards is None else tuple(shards))
    return found


def wire(shards):
    return [None if kind is None else [s.wire() for s in kind] for kind in shards]


def parse(value, kinds):
    """A decode's wire() of its shards, for `kinds` state types; kvx.InvalidArgument when
    malformed."""
    if value is None:
        return [None] * kinds
    if not isinstance(value, list) or len(value) != kinds:
        raise kvx.InvalidArgument(f"state shards for {kinds} types expected, got "
                                  f"{str(value)[:100]}")
    return [None if kind is None else tuple(Sharding.from_wire(w) for w in kind)
            for kind in value]
