"""Where one layer's K and V bytes are inside a vLLM KV-cache tensor, and how two workers'
blocks pair byte for byte (vllm_layout.py).

vLLM hands a connector one tensor per attention layer, a view that may be strided and may
share its storage with the other layers. The logical shape says what each dimension is, and
it has taken these forms (the physical order, NHD or HND and where the layers and blocks
sit, is in the strides, never in the shape):
    [2, blocks, tokens, heads, head_size]          K and V split, outermost
    [blocks, 2, tokens, heads, head_size]          K and V split, per block
    [blocks, heads, tokens, channels]              K and V packed per head (channels = K
                                                   then V), also each view of one shared
                                                   buffer cut by a KVCacheLayout
    [blocks, tokens, channels]                     MLA (one latent per token)
"tokens" is the kernel's block size; a scheduler block is `blocks_per_block` kernel blocks
in a row.

A geometry is a dict {dimension: [size, stride in bytes]} over the dimensions "kv" (absent
when packed), "block", "token", "head" and "chan", plus the element size: the same form for
a local tensor and for a peer's (from its handshake)."""
import numpy as np

import kvx

DIMENSIONS = ("kv", "block", "token", "head", "chan")
_SHAPES = {5: [("kv", "block", "token", "head", "chan"), ("block", "kv", "token", "head", "chan")],
           4: [("block", "head", "token", "chan")], 3: [("block", "token", "chan")]}


def geometry_of(tensor):
    """{dimension: [size, byte stride]} of a layer's tensor; raises ValueError naming the
    shape for one that is none of the forms above."""
    shape, strides = tuple(tensor.shape), tuple(tensor.stride())
    element = tensor.element_size()
    forms = _SHAPES.get(len(shape), [])
    if len(shape) == 5:  # which of the first two dimensions is K/V
        forms = [f for f in forms if shape[f.index("kv")] == 2]
        if len(forms) == 2 and shape[0] == shape[1] == 2:
            forms = forms[:1] if strides[0] > strides[1] else forms[1:]
    if not forms:
        raise ValueError(f"a KV cache layer of shape {list(shape)} (strides {list(strides)}) "
                         "is none of [2, blocks, tokens, heads, head_size], [blocks, 2, tokens, "
                         "heads, head_size], [blocks, heads, tokens, channels] or [blocks, "
                         "tokens, channels] (MLA)")
    dims = {name: [size, stride * element] for name, size, stride in
            zip(forms[0], shape, strides)}
    dims.setdefault("head", [1, 0])
    if dims["chan"][1] != element:
        raise ValueError(f"a KV cache layer of shape {list(shape)} has strides "
                         f"{list(strides)}: its last dimension must be contiguous")
    return dims


def _outermost_first(dims):
    """[(name, [size, stride])] by decreasing stride: the physical order."""
    return sorted(dims.items(), key=lambda item: -item[1][1])


def physical_order(dims):
    """The dimensions of more than one entry, outermost first: the layout in words."""
    return [name for name, (size, _) in _outermost_first(dims) if size > 1]


def layout_name(dims):
    return "[" + ", ".join(physical_order(dims)) + "]"


def _block_view(dims, blocks_per_block, head_count):
    """The dimensions of one scheduler block's `head_count` heads, outermost first:
    [(name, size, stride)], dimensions of one entry left out."""
    sizes = {name: size for name, (size, _) in dims.items()}
    sizes["block"], sizes["head"] = blocks_per_block, head_count
    return [(name, sizes[name], stride) for name, (_, stride) in _outermost_first(dims)
            if sizes[name] > 1]


def _contiguous_tail(view, element):
    """How many of `view`'s innermost dimensions are one contiguous run."""
    expected, count = element, 0
    for _, size, stride in reversed(view):
        if stride != expected:
            break
        expected *= size
        count += 1
    return count


def _offsets(view):
    """Byte offsets of every entry of `view`'s dimensions, in order (uint64)."""
    offsets = np.zeros(1, dtype=np.uint64)
    for _, size, stride in view:
        offsets = (offsets[:, None] + np.arange(size, dtype=np.uint64)[None, :] *
                   np.uint64(stride)).reshape(-1)
    return offsets


def pair(mine, theirs, element, blocks_per_block, head_count):
    """How `head_count` heads of a scheduler block here and there pair: (offsets here, offsets
    there, run length), the offsets (uint64, one per run, the same count on both sides) from
    the first of those heads in the block. Raises kvx.InvalidArgument when the two lay a
    block out in different orders (one-sided copies cannot transpose)."""
    here, there = (_block_view(d, blocks_per_block, head_count) for d in (mine, theirs))
    if [n for n, _, _ in here] != [n for n, _, _ in there] or \
            [s for _, s, _ in here] != [s for _, s, _ in there]:
        raise kvx.InvalidArgument(
            f"the KV caches lay a block out differently: {layout_name(mine)} here, "
            f"{layout_name(theirs)} there (set the same VLLM_KV_CACHE_LAYOUT on both)")
    tail = min(_contiguous_tail(here, element), _contiguous_tail(there, element))
    length = element
    for _, size, _ in here[len(here) - tail:]:
        length *= size
    return _offsets(here[:len(here) - tail]), _offsets(there[:len(there) - tail]), length
