"""KV caches allocated the way vLLM allocates them, for the connector tests: one tensor per
attention layer, named as vLLM names the layers, with the layouts vLLM has handed connectors.
Each follows upstream vLLM (vllm-project/vllm) at the commit named, facts only:

  "kv-outer"     [2, blocks, tokens, heads, head_size], one buffer per layer, NHD: FLASH_ATTN's
                 get_kv_cache_shape in vllm/v1/attention/backends/flash_attn.py @5704f34 (what
                 vLLM handed out before the blocks-first change).
  "blocks-kv"    [blocks, 2, tokens, heads, head_size], one buffer per layer, HND as a permuted
                 view (stride order (0, 1, 3, 2, 4)): FlashInfer's shape and stride order,
                 vllm/v1/attention/backends/flashinfer.py @5314c90.
  "packed"       [blocks, heads, tokens, 2 * head_size], K and V packed per head, one buffer
                 per layer, NHD (stride order (0, 2, 1, 3)): the packed FLASH_ATTN shape
                 (vLLM's flash_attn.py after K and V were packed per head).
  "LBHNC", "LBNHC", "LHBNC", "BLHNC", "BLNHC", "BHLNC"
                 one int8 buffer for every layer, each layer's tensor a [blocks, heads,
                 tokens, channels] view of it (channels: K then V) made with as_strided over
                 the logical [layers, blocks, heads, tokens, channels], the letters giving the
                 physical order: KVCacheLayout in vllm/v1/kv_cache_layout.py @14f7a27, the
                 views as create_kv_cache_views in vllm/v1/worker/utils.py makes them (read
                 in a copy whose commit the index does not give).
  "mla"          [blocks, tokens, 576] per layer (512 latent + 64 rope; one latent, held whole
                 by every TP rank): MLA's common backend, vllm/v1/attention/backends/mla/
                 common.py @37fa5c0.
Layer names: "model.layers.{i}.self_attn.attn", the Attention prefix of Llama-style models.
The tensors' `tokens` is the kernel block size; the scheduler's blocks are `kernel_blocks`
kernel blocks each (vllm/v1/worker/block_table.py @01edfd0: scheduler block b is kernel
blocks b * k .. b * k + k - 1).

`parts(tensor, layout)` gives a layer's bytes as [K/V part][blocks, tokens, heads, bytes]
views (one part when K and V are packed), which is how the tests fill and compare them."""
import torch

SPLIT = {"kv-outer": ((2, "B", "N", "H", "D"), (0, 1, 2, 3, 4)),
         "blocks-kv": (("B", 2, "N", "H", "D"), (0, 1, 3, 2, 4)),
         "packed": (("B", "H", "N", "C"), (0, 2, 1, 3)),
         "mla": (("B", "N", "M"), (0, 1, 2))}
SHARED = ("LBHNC", "LBNHC", "LHBNC", "BLHNC", "BLNHC", "BHLNC")
LAYOUTS = tuple(SPLIT) + SHARED
MLA_WIDTH = 576


def layer_names(count):
    return [f"model.layers.{i}.self_attn.attn" for i in range(count)]


def allocate(layout, layers, kernel_blocks, kernel_block_size, heads, head_dim, dtype,
             device="cpu"):
    """{layer name: tensor} of `layers` layers, in forward order, on `device`."""
    if layout in SHARED:
        return _shared(layout, layers, kernel_blocks, kernel_block_size, heads, head_dim, dtype,
                       device)
    shape, order = SPLIT[layout]
    sizes = {"B": kernel_blocks, "N": kernel_block_size, "H": heads, "D": head_dim,
             "C": 2 * head_dim, "M": MLA_WIDTH}
    logical = [sizes.get(dim, dim) for dim in shape]
    caches = {}
    for name in layer_names(layers):
        physical = torch.zeros([logical[i] for i in order], dtype=dtype, device=device)
        caches[name] = physical.permute(*[order.index(i) for i in range(len(order))])
    return caches


def _shared(layout, layers, kernel_blocks, kernel_block_size, heads, head_dim, dtype, device):
    element = torch.empty(0, dtype=dtype).element_size()
    sizes = {"L": layers, "B": kernel_blocks, "H": heads, "N": kernel_block_size,
             "C": 2 * head_dim * element}
    strides, step = {}, 1
    for letter in reversed(layout):
        strides[letter] = step
        step *= sizes[letter]
    raw = torch.zeros(step, dtype=torch.int8, device=device)
    view = torch.as_strided(raw, [sizes[d] for d in "LBHNC"], [strides[d] for d in "LBHNC"])
    return {name: view[i].view(dtype) for i, name in enumerate(layer_names(layers))}


def parts(tensor, layout):
    """[blocks, tokens, heads, bytes] uint8 views of K and V (or of both, packed)."""
    if layout == "kv-outer":
        halves = [tensor[0], tensor[1]]
    elif layout == "blocks-kv":
        halves = [tensor[:, 0], tensor[:, 1]]
    elif layout == "mla":
        halves = [tensor.unsqueeze(2)]
    else:  # [blocks, heads, tokens, channels]
        halves = [tensor.permute(0, 2, 1, 3)]
    return [half.view(torch.uint8) for half in halves]
