"""Which tensor-parallel rank holds which KV heads, and which prefill ranks a decode rank
reads from (vllm.py, vllm_pull.py, vllm_push.py).

vLLM splits a model's KV heads over the TP ranks, each rank holding total // tp of them; where
TP is above the model's KV heads, each rank holds one head and tp // total consecutive ranks
hold the same one (replicated heads; an MLA cache has one latent "head", held by every rank).
A decode rank takes each of its heads from one prefill rank holding it, spreading replicas
over the decode ranks; with Mamba layers, also its state from every prefill rank holding some
of it (state_slices.sources). Every prefill rank is told once by each decode rank that
contacts it (a read, a release, or a push destination): a prefill rank that no decode rank
reads from is contacted by one decode rank all the same, so that its blocks go."""
import dataclasses
import functools

import kvx
from kvx.integrations import state_slices


@dataclasses.dataclass(frozen=True)
class Source:
    """A prefill rank holding `count` of a decode rank's heads: its heads from `first_there`
    are the decode rank's from `first_here`. A contact with count 0 reads nothing."""
    rank: int
    first_here: int
    first_there: int
    count: int


def held_heads(rank, tp_size, total_heads):
    """(first, count) of the model's KV heads that TP rank `rank` of `tp_size` holds."""
    if total_heads < 1 or tp_size < 1 or not 0 <= rank < tp_size:
        raise kvx.InvalidArgument(f"rank {rank} of TP {tp_size} with {total_heads} KV heads")
    if tp_size <= total_heads:
        if total_heads % tp_size:
            raise kvx.InvalidArgument(f"{total_heads} KV heads do not split over TP {tp_size}")
        per_rank = total_heads // tp_size
        return rank * per_rank, per_rank
    if tp_size % total_heads:
        raise kvx.InvalidArgument(f"TP {tp_size} does not replicate {total_heads} KV heads "
                                  "evenly")
    return rank // (tp_size // total_heads), 1


@functools.lru_cache(maxsize=1024)
def sources(decode_rank, decode_tp, prefill_tp, total_heads):
    """The prefill ranks decode rank `decode_rank` reads its heads from, in head order (a
    tuple of Source; computed once per layout, as the functions below)."""
    first, count = held_heads(decode_rank, decode_tp, total_heads)
    groups = {}  # a prefill head range -> the prefill ranks holding it
    for rank in range(prefill_tp):
        groups.setdefault(held_heads(rank, prefill_tp, total_heads), []).append(rank)
    out = []
    for (p_first, p_count), replicas in sorted(groups.items()):
        start, end = max(first, p_first), min(first + count, p_first + p_count)
        if start < end:
            out.append(Source(replicas[decode_rank % len(replicas)], start - first,
                              start - p_first, end - start))
    return tuple(out)


@functools.lru_cache(maxsize=1024)
def contacts(decode_rank, decode_tp, prefill_tp, total_heads, states=False):
    """sources(), then (`states`: a model with Mamba layers) the prefill ranks holding some of
    this rank's state but none of its heads (count 0), then the prefill ranks no decode rank
    reads from that this one tells (count 0): every prefill rank is told by at least one
    decode rank."""
    found = sources(decode_rank, decode_tp, prefill_tp, total_heads)
    if states:
        found += tuple(Source(rank, 0, 0, 0)
                       for rank in state_slices.sources(decode_rank, decode_tp, prefill_tp)
                       if rank not in {s.rank for s in found})
    read = {s.rank for d in range(decode_tp)
            for s in sources(d, decode_tp, prefill_tp, total_heads)}
    if states:
        read |= {r for d in range(decode_tp)
                 for r in state_slices.sources(d, decode_tp, prefill_tp)}
    return found + tuple(Source(rank, 0, 0, 0) for rank in range(prefill_tp)
                         if rank not in read and rank % decode_tp == decode_rank)


@functools.lru_cache(maxsize=1024)
def contacted_by(prefill_rank, decode_tp, prefill_tp, total_heads, states=False):
    """How many decode ranks tell prefill rank `prefill_rank` about a request."""
    return sum(1 for d in range(decode_tp)
               if any(c.rank == prefill_rank
                      for c in contacts(d, decode_tp, prefill_tp, total_heads, states)))
