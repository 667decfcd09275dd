"""Which bytes of a recurrent (Mamba, gated delta net) state one tensor-parallel rank holds, and
which of them move between a prefill rank and a decode rank of different TP sizes, for the
vLLM and SGLang connectors.

Each rank holds a shard of every state tensor along one axis (channels of the conv state,
heads of the SSM state). Along that axis a tensor is made of parts sharded separately: a
Mamba2 conv state is [x | B | C], a gated delta net's [q | k | v], an SSM state its heads
alone. Each rank holds the same share of every part, so a rank's slice of a block's tensor is
`rows` rows (the dimensions before the sharded axis: the conv kernel's width where the state
is stored width-first), each row the rank's share of every part in turn, `unit` bytes per
index of the axis. A part of a model whose groups are fewer than the TP size is replicated
instead (vLLM and SGLang give each rank one whole group, the one its heads use: rank *
groups // tp): a decode rank then takes each group it holds from the first of its sources
holding it.

Facts from upstream: the shapes of vLLM's MambaStateShapeCalculator
(vllm/model_executor/layers/mamba/mamba_utils.py @2afe1e8), the ranks and pieces vLLM's NIXL
connector reads (nixl/tp_mapping.py @4b5c627), SGLang's state_dim_per_tensor,
state_slice_outer_counts and conv shard groups (disaggregation/mooncake/conn.py @0005973)."""
import dataclasses
import functools

import kvx


@dataclasses.dataclass(frozen=True)
class Sharding:
    """One state tensor of one rank, inside a block's state: `offset` bytes from the state's
    start, `rows` rows of `pieces` (each part's indices on this rank, in order), `unit` bytes
    an index."""
    offset: int
    rows: int
    unit: int
    pieces: tuple

    @property
    def row_bytes(self):
        return sum(self.pieces) * self.unit

    @property
    def nbytes(self):
        return self.rows * self.row_bytes

    def wire(self):
        return [self.offset, self.rows, self.unit, list(self.pieces)]

    @classmethod
    def from_wire(cls, value):
        """A Sharding from a peer's description; raises kvx.InvalidArgument when malformed."""
        try:
            offset, rows, unit, pieces = value
            made = cls(int(offset), int(rows), int(unit), tuple(int(p) for p in pieces))
        except (TypeError, ValueError) as error:
            raise kvx.InvalidArgument(f"a malformed state sharding {str(value)[:100]}: "
                                      f"{error}") from None
        if made.offset < 0 or made.rows < 1 or made.unit < 1 or not made.pieces or \
                min(made.pieces) < 1 or len(made.pieces) > 16:
            raise kvx.InvalidArgument(f"an impossible state sharding {made}")
        return made


def sources(decode_rank, decode_tp, prefill_tp):
    """The prefill ranks holding some of decode rank `decode_rank`'s state, in order: those
    whose share of the sharded axis overlaps its own."""
    return tuple(p for p in range(prefill_tp)
                 if p * decode_tp < (decode_rank + 1) * prefill_tp and
                 decode_rank * prefill_tp < (p + 1) * decode_tp)


def _piece_moves(piece, prefill_size, p_rank, p_tp, decode_size, d_rank, d_tp):
    """[(prefill index, decode index, count)] of one part between the two ranks."""
    p_whole, d_whole = prefill_size * p_tp, decode_size * d_tp
    if p_whole == d_whole:  # sharded alike: the two shares' overlap
        low = max(p_rank * prefill_size, d_rank * decode_size)
        high = min((p_rank + 1) * prefill_size, (d_rank + 1) * decode_size)
        if low >= high:
            return []
        return [(low - p_rank * prefill_size, low - d_rank * decode_size, high - low)]
    # The side whose ranks outnumber the part's groups holds one group a rank (a replica):
    # that group's width, and the groups the other side splits.
    width, whole = (prefill_size, d_whole) if p_whole > d_whole else (decode_size, p_whole)
    if whole % width:
        raise kvx.InvalidArgument(
            f"state part {piece} is {prefill_size} wide on each of {p_tp} prefill ranks and "
            f"{decode_size} on each of {d_tp} decode ranks: neither a split of one axis nor "
            "whole groups of it")
    groups = whole // width
    if d_whole > p_whole:  # each decode rank holds one group: from its first source
        group, held = d_rank * groups // d_tp, prefill_size // width
        first = sources(d_rank, d_tp, p_tp)[0]
        if p_rank != first or not p_rank * held <= group < (p_rank + 1) * held:
            return []
        return [((group - p_rank * held) * width, 0, width)]
    group, held = p_rank * groups // p_tp, decode_size // width
    if not d_rank * held <= group < (d_rank + 1) * held:
        return []
    first = min(q for q in sources(d_rank, d_tp, p_tp) if q * groups // p_tp == group)
    return [(0, (group - d_rank * held) * width, width)] if p_rank == first else []


def _tensor_moves(index, prefill, p_rank, p_tp, decode, d_rank, d_tp):
    if prefill.rows != decode.rows or prefill.unit != decode.unit or \
            len(prefill.pieces) != len(decode.pieces):
        raise kvx.InvalidArgument(
            f"state tensor {index} is {prefill.rows} rows of parts {list(prefill.pieces)} x "
            f"{prefill.unit} bytes on the prefill (TP {p_tp}), {decode.rows} of "
            f"{list(decode.pieces)} x {decode.unit} on the decode (TP {d_tp}): not the same "
            "model's state")
    moves = []
    p_start = d_start = 0
    for piece, (p_size, d_size) in enumerate(zip(prefill.pieces, decode.pieces)):
        for p_at, d_at, count in _piece_moves(f"{index}.{piece}", p_size, p_rank, p_tp, d_size,
                                              d_rank, d_tp):
            moves.append(((p_start + p_at) * prefill.unit, (d_start + d_at) * decode.unit,
                          count * prefill.unit))
        p_start += p_size
        d_start += d_size
    out = []
    for row in range(prefill.rows):
        for p_at, d_at, length in moves:
            out.append((prefill.offset + row * prefill.row_bytes + p_at,
                        decode.offset + row * decode.row_bytes + d_at, length))
    return out


@functools.lru_cache(maxsize=4096)
def slices(prefill, p_rank, p_tp, decode, d_rank, d_tp):
    """[(prefill offset, decode offset, bytes)] a block's state moves between prefill rank
    `p_rank` of `p_tp` and decode rank `d_rank` of `d_tp`, offsets from each state's start,
    runs that continue each other merged. `prefill`, `decode`: each side's tuple of Sharding,
    one per state tensor. Empty for ranks that share nothing. Raises kvx.InvalidArgument,
    naming both sides, where the states cannot pair."""
    if len(prefill) != len(decode):
        raise kvx.InvalidArgument(f"{len(prefill)} state tensors on the prefill, "
                                  f"{len(decode)} on the decode")
    runs = []
    for index, (p, d) in enumerate(zip(prefill, decode)):
        for p_at, d_at, length in _tensor_moves(index, p, p_rank, p_tp, d, d_rank, d_tp):
            if runs and runs[-1][0] + runs[-1][2] == p_at and runs[-1][1] + runs[-1][2] == d_at:
                runs[-1] = (runs[-1][0], runs[-1][1], runs[-1][2] + length)
            else:
                runs.append((p_at, d_at, length))
    return tuple(runs)


def check(prefill, p_tp, decode, d_tp):
    """Raises kvx.InvalidArgument unless every pair of ranks' states can pair (slices), and
    every byte of each decode rank's state comes from exactly one prefill rank."""
    if not (p_tp % d_tp == 0 or d_tp % p_tp == 0):
        raise kvx.InvalidArgument(f"Mamba state moves between TP sizes that divide one "
                                  f"another: TP {p_tp} and {d_tp}")
    total = sum(d.nbytes for d in decode)
    for d_rank in range(d_tp):
        got = sum(length for p_rank in sources(d_rank, d_tp, p_tp)
                  for _, _, length in slices(prefill, p_rank, p_tp, decode, d_rank, d_tp))
        if got != total:
            raise kvx.InvalidArgument(
                f"decode rank {d_rank} of TP {d_tp} would get {got} of its {total} state "
                f"bytes from the prefill's TP {p_tp} ranks: the states do not pair")
