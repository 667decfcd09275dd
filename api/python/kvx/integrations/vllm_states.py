"""Where a Mamba layer's state is inside the buffer vLLM gave it, for kvx's vLLM connector
(vllm_layout.py).

A Mamba (state) layer's cache is not a paged KV tensor. vLLM hands a connector, for such a
layer, the list of its state tensors (the conv state, then the SSM state, ...), each a
strided view of the layer's int8 buffer: [blocks, *state shape], the block stride one page
(MambaSpec.page_size_bytes), the states at consecutive offsets inside the page
(GPUModelRunner._reshape_kv_cache_tensors, vllm/v1/worker/gpu_model_runner.py @4e17906);
later code hands one int8 [blocks, 1, 1, page] tensor instead. Either way block b of the
layer is one whole recurrent state: the bytes from its first state's start to its last
state's end in page b. That span moves as one descriptor per (layer, block), and only
between workers of the same TP size: each rank holds its own shard of the state."""
import dataclasses


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
