"""Which prefill ranks a decode rank of SGLang reads from, and which part of a page each
writes, when the two engines' attention TP sizes differ (sglang.py). The rules are SGLang's
own, so that kvx pairs ranks as its other backends do (common/conn.py's rank mapping and
mooncake/conn.py's head slicing, sgl-project/sglang @0094505 and @0005973):

  - equal TP: decode rank r reads from prefill rank r, whole pages;
  - decode TP D above prefill TP P: rank r reads from prefill rank r // (D / P), which waits
    for the metadata of all D / P decode ranks it serves and writes each its heads;
  - D below P: rank r reads from the P / D prefill ranks r * (P / D) ..., each writing its
    heads into the decode's pages (MLA: one of them writes whole pages, the rest are told
    nothing is needed from them).

A page of an MHA pool is page_size tokens of heads x head_dim per layer and K/V buffer:
a head range of a page is one run per token. Heads above the model's KV heads are
replicated, as SGLang splits them: rank i holds heads from i * total // tp."""
import dataclasses

import numpy as np

import kvx


def check_sizes(prefill_tp, decode_tp):
    """Raises kvx.InvalidArgument unless one TP size divides the other."""
    if prefill_tp <= 0 or decode_tp <= 0 or (max(prefill_tp, decode_tp) %
                                              min(prefill_tp, decode_tp)):
        raise kvx.InvalidArgument(f"the prefill's attention TP is {prefill_tp}, this decode's "
                                  f"{decode_tp}: one must divide the other")


def targets(decode_rank, decode_tp, prefill_tp):
    """The prefill ranks decode rank `decode_rank` reads from (the first writes the aux)."""
    check_sizes(prefill_tp, decode_tp)
    rank = decode_rank % decode_tp
    if decode_tp >= prefill_tp:
        return [rank // (decode_tp // prefill_tp)]
    share = prefill_tp // decode_tp
    return list(range(rank * share, (rank + 1) * share))


def destinations(decode_tp, prefill_tp):
    """How many decode ranks' metadata a prefill rank's sender waits for."""
    return decode_tp // prefill_tp if decode_tp > prefill_tp else 1


@dataclasses.dataclass(frozen=True)
class HeadSlice:
    """Heads [src_first, src_first + count) of the prefill rank's pages go to heads
    [dst_first, ...) of the decode rank's."""
    src_first: int
    dst_first: int
    count: int


def head_slice(prefill_rank, prefill_tp, decode_rank, decode_tp, total_heads):
    """The part of a page prefill rank `prefill_rank` writes to decode rank `decode_rank`;
    None where the TP sizes are equal (whole pages)."""
    if prefill_tp == decode_tp:
        return None
    src_heads = max(1, total_heads // prefill_tp)
    dst_heads = max(1, total_heads // decode_tp)
    if prefill_tp > decode_tp:
        replicas = max(1, prefill_tp // total_heads)
        return HeadSlice(0, ((prefill_rank % prefill_tp) // replicas * src_heads) % dst_heads,
                         src_heads)
    replicas = max(1, decode_tp // total_heads)
    return HeadSlice(((decode_rank % decode_tp) // replicas * dst_heads) % src_heads, 0,
                     dst_heads)


def sliced_rows(buffers, pages, item_lens, page_size, heads, first, count):
    """uint64 rows (region, offset, length) of heads [first, first + count) of every token
    of `pages` in every buffer (`buffers`: region ids; `item_lens`: a page's bytes in each;
    `heads`: the heads a page holds)."""
    pages = np.asarray(pages, dtype=np.uint64)
    tokens = np.arange(page_size, dtype=np.uint64)
    parts = []
    for region, item in zip(buffers, item_lens):
        head_bytes = item // page_size // heads
        offsets = (pages[:, None] * np.uint64(item) + tokens[None, :] *
                   np.uint64(item // page_size) + np.uint64(first * head_bytes)).reshape(-1)
        parts.append(np.stack([np.full(offsets.size, region, np.uint64), offsets,
                               np.full(offsets.size, count * head_bytes, np.uint64)], axis=1))
    return np.concatenate(parts) if parts else np.zeros((0, 3), dtype=np.uint64)
