"""Where a Mamba layer's state is inside the buffer vLLM gave it, for kvx's vLLM connector
(vllm_layout.py).

A Mamba (state) layer's cache is not a paged KV tensor. vLLM hands a connector, for such a
layer, the list of its state tensors (the conv state, then the SSM state, ...), each a
strided view of the layer's int8 buffer: [blocks, *state shape], the block stride one page
(MambaSpec.page_size_bytes), the states at consecutive offsets inside the page
(GPUModelRunner._reshape_kv_cache_tensors, vllm/v1/worker/gpu_model_runner.py @4e17906);
later code hands one int8 [blocks, 1, 1, page] tensor instead. Either way block b of the
layer is one whole recurrent state: the bytes from its first state's start to its last
state's end in page b. That span moves as one descriptor per (layer, block) between workers of one TP
size. Between TP sizes each rank holds its own shard of every state tensor, and what moves
are the pieces state_slices.py pairs; where each tensor's shard lies comes from its shape and
the layer's mamba_type (sharding()). The conv state is [kernel - 1, channels] per block, or
[channels, kernel - 1] where VLLM_SSM_CONV_STATE_LAYOUT is DS
(vllm/model_executor/layers/mamba/mamba_utils.py: get_conv_state_layout)."""
import dataclasses
import math
import os

from kvx.integrations.state_slices import Sharding


@dataclasses.dataclass(frozen=True)
class StatePlace:
    """One Mamba layer's state: its buffer (address, nbytes, device), the byte offset of
    block 0's state from the buffer's start, the block stride and the span moved a block."""
    buffer: tuple
    offset: int
    stride: int
    span: int
    blocks: int


def _tensors(name, value):
    tensors = list(value) if isinstance(value, (list, tuple)) else [value]
    if not tensors or not all(hasattr(t, "data_ptr") and hasattr(t, "stride") for t in tensors):
        raise ValueError(f"Mamba layer {name}: its cache is {type(value).__name__}, not a "
                         "tensor or a list of state tensors")
    return tensors


def state_place(name, value, storage, device):
    """The StatePlace of Mamba layer `name` whose cache vLLM gave as `value` (a tensor or a
    list of them); `storage(t)` and `device(t)` as vllm_layout reads them. Raises
    ValueError, naming the layer and its tensors, where its states are not all in one buffer
    with one block stride, or a block's state is not contiguous within its page."""
    tensors = _tensors(name, value)
    shapes = [f"{list(t.shape)} {t.dtype} strides {list(t.stride())}" for t in tensors]
    buffers = {storage(t) for t in tensors}
    blocks = {t.shape[0] if t.dim() else 0 for t in tensors}
    strides = {t.stride(0) * t.element_size() if t.dim() else 0 for t in tensors}
    if len(buffers) != 1 or len(blocks) != 1 or len(strides) != 1 or 0 in blocks:
        raise ValueError(f"Mamba layer {name}: its states ({'; '.join(shapes)}) must be "
                         "views of one buffer with one block count and block stride")
    (address, nbytes), = buffers
    starts, ends = [], []
    for tensor in tensors:
        block = tensor[0]
        if not block.is_contiguous():
            raise ValueError(f"Mamba layer {name}: a block's state {list(block.shape)} (strides "
                             f"{list(block.stride())}) is not contiguous")
        starts.append(block.data_ptr() - address)
        ends.append(starts[-1] + block.numel() * block.element_size())
    stride, = strides
    span = max(ends) - min(starts)
    if span > stride:
        raise ValueError(f"Mamba layer {name}: a block's states span {span} bytes, more than "
                         f"its block stride of {stride}")
    return StatePlace((address, nbytes, device(tensors[0])), min(starts), stride, span,
                      blocks.pop())


def first_tensor(value):
    """A tensor of a layer's cache (one of a Mamba layer's states): its device and stream."""
    return value[0] if isinstance(value, (list, tuple)) else value


def conv_dim_first():
    """True where vLLM stores a conv state channels first (DS), as its own helper says when
    vLLM is importable, else as VLLM_SSM_CONV_STATE_LAYOUT does (SD by default)."""
    try:
        from vllm.model_executor.layers.mamba.mamba_utils import is_conv_state_dim_first
    except ImportError:
        return os.environ.get("VLLM_SSM_CONV_STATE_LAYOUT", "SD").upper() == "DS"
    return bool(is_conv_state_dim_first())


def _conv(shape, element, dim_first):
    """(rows, unit, channels) of a conv state block."""
    if len(shape) != 2:
        return None
    channels, width = shape if dim_first else shape[::-1]
    return (1, width * element, channels) if dim_first else (width, element, channels)


def _parts(mamba_type, conv_channels, ssm_shape):
    """The conv state's parts along its channels, by model kind (None: unknown), from the
    SSM state's shape: Mamba2 [x | B | C] (x the heads' channels), a gated delta net
    [q | k | v] (v its value heads'), Mamba1 one part."""
    if mamba_type == "mamba1":
        return (conv_channels,)
    if mamba_type not in ("mamba2", "gdn_attention") or len(ssm_shape) != 3:
        return None
    wide = ssm_shape[0] * ssm_shape[1]
    rest = conv_channels - wide
    if rest <= 0 or rest % 2:
        return None
    return (wide, rest // 2, rest // 2) if mamba_type == "mamba2" else \
        (rest // 2, rest // 2, wide)


def sharding(value, mamba_type, dim_first):
    """The Sharding of each state tensor of a Mamba layer's cache `value` (its list of state
    tensors, block first), offsets from the first state's start; None where the layer's kind
    or its tensors are not ones whose shards are known (those move between equal TP sizes
    only)."""
    tensors = list(value) if isinstance(value, (list, tuple)) else [value]
    if any(t.dim() < 2 for t in tensors):
        return None
    shapes = [tuple(t.shape[1:]) for t in tensors]
    elements = [t.element_size() for t in tensors]
    starts = [t[0].data_ptr() for t in tensors]
    base = min(starts)
    if mamba_type == "linear_attention" and len(shapes) == 1 and len(shapes[0]) == 3:
        heads, *inner = shapes[0]
        made = [Sharding(0, 1, math.prod(inner) * elements[0], (heads,))]
    elif len(shapes) == 2:
        conv = _conv(shapes[0], elements[0], dim_first)
        if conv is None:
            return None
        rows, unit, channels = conv
        parts = _parts(mamba_type, channels, shapes[1])
        if parts is None or len(shapes[1]) < 2:
            return None
        ssm_unit = math.prod(shapes[1][1:]) * elements[1]
        made = [Sharding(starts[0] - base, rows, unit, parts),
                Sharding(starts[1] - base, 1, ssm_unit, (shapes[1][0],))]
    else:
        return None
    if any(m.nbytes != math.prod(shape) * element
           for m, shape, element in zip(made, shapes, elements)):
        return None
    return tuple(made)

