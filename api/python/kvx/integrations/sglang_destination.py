"""One decode rank that an SGLang request's pages go to, from its meta (sglang_sender.py),
and the descriptors that address them: whole pages, or this prefill rank's heads of each
token where the attention TP sizes differ (sglang_heads.py), and the state buffers' items."""
import dataclasses
import logging

import numpy as np

import kvx
from kvx.integrations import sglang_heads as heads, sglang_state_shards as state_shards
from kvx.integrations import state_slices
from kvx.integrations.sglang_runs import expand, paired_runs

log = logging.getLogger("kvx.sglang")
MAX_PAGES = 1 << 24  # in one request's meta: more than any KV pool holds


@dataclasses.dataclass
class Destination:
    """One decode rank this request's pages go to, from its meta."""
    peer: str
    pages: np.ndarray
    aux: object
    state: object
    rank: int
    tp: int
    item_lens: list
    dummy: bool
    room: object = None
    told: bool = False  # it was told the room failed, or it aborted it
    state_item_lens: list = None  # its state items' bytes, per type and tensor
    state_shards: object = None   # its sglang_state_shards.wire(), parsed when used

    @classmethod
    def of(cls, room, peer, body, item_lens):
        """From a decode's meta; ValueError (or TypeError) for a malformed one."""
        page_runs = [(int(start), int(count)) for start, count in body.get("runs") or []]
        if any(start < 0 or count < 0 for start, count in page_runs) or \
                sum(count for _, count in page_runs) > MAX_PAGES:
            raise ValueError(f"page runs out of range (at most {MAX_PAGES} pages)")
        state_items = body.get("state_item_lens")
        return cls(peer, expand(page_runs), body.get("aux"), body.get("state"),
                   int(body.get("rank", 0)), int(body.get("tp", 1)),
                   [int(n) for n in body.get("item_lens") or item_lens],
                   bool(body.get("dummy")), room,
                   state_item_lens=None if state_items is None else
                   [[int(n) for n in kind] for kind in state_items],
                   state_shards=body.get("state_shards"))

    def kv_rows(self, mgr, pages, dst, remote_kv):
        """(local rows, remote rows) of the pages' KV for this decode rank: whole pages where
        the TP sizes agree (one descriptor per run consecutive on both sides), else this
        rank's part of each token (sglang_heads.py); `mgr`: this rank's KvxKVManager."""
        layout = mgr.rank_layout
        part = heads.head_slice(layout["attn_tp_rank"], layout["attn_tp_size"],
                                self.rank, self.tp, mgr.total_heads)
        if part is None:
            src_starts, dst_starts, counts = paired_runs(pages, dst)
            return mgr.kv.rows(src_starts, counts), remote_kv.rows(dst_starts, counts)
        page_size = layout["page_size"]
        src_heads = max(1, mgr.total_heads // layout["attn_tp_size"])
        dst_heads = max(1, mgr.total_heads // self.tp)
        for mine, theirs in zip(mgr.kv.item_lens, self.item_lens):
            if mine // page_size // src_heads != theirs // page_size // dst_heads:
                raise kvx.InvalidArgument(
                    f"room {self.room}: a head is {mine // page_size // src_heads} bytes here "
                    f"({mine}-byte pages of {src_heads} heads), "
                    f"{theirs // page_size // dst_heads} at the decode rank {self.rank} "
                    f"({theirs}-byte pages of {dst_heads} heads)")
        return (heads.sliced_rows(mgr.kv.regions, pages, mgr.kv.item_lens, page_size,
                                  src_heads, part.src_first, part.count),
                heads.sliced_rows(remote_kv.regions, dst, self.item_lens, page_size,
                                  dst_heads, part.dst_first, part.count))

    def state_rows(self, mgr, state_indices, remote_state):
        """(local rows, remote rows) of the state buffers' items (Mamba slots, SWA pages):
        the request's indices here to the decode's, type by type, on the last chunk; between
        attention TP sizes this rank's pieces of each Mamba item (sglang_state_shards.py)."""
        my_rank, my_tp = (mgr.rank_layout[k] for k in ("attn_tp_rank", "attn_tp_size"))
        theirs_shards = None
        local, remote = [], []
        theirs_all = self.state or []
        for kind, (mine, theirs) in enumerate(zip(state_indices or [], theirs_all)):
            if mine is None or theirs is None:
                continue
            mine, theirs = np.asarray(mine, np.int64), np.asarray(theirs, np.int64)
            if my_tp != self.tp:
                if theirs_shards is None:
                    theirs_shards = state_shards.parse(self.state_shards, len(mgr.state))
                rows = self._sliced_rows(mgr, kind, mine, theirs, theirs_shards[kind],
                                         remote_state[kind], my_rank, my_tp)
                local.append(rows[0])
                remote.append(rows[1])
                continue
            if mine.size != theirs.size:
                log.warning("kvx: room %s: state buffer %d has %d items here, %d at the decode: "
                            "the first %d move", self.room, kind, mine.size, theirs.size,
                            min(mine.size, theirs.size))
            count = min(mine.size, theirs.size)
            src_starts, dst_starts, counts = paired_runs(mine[:count], theirs[:count])
            local.append(mgr.state[kind].rows(src_starts, counts))
            remote.append(remote_state[kind].rows(dst_starts, counts))
        return local, remote

    def _sliced_rows(self, mgr, kind, mine, theirs, their_shards, remote, my_rank, my_tp):
        """This prefill rank's pieces of Mamba state item `mine[0]` into the decode's
        `theirs[0]`, tensor by tensor."""
        my_shards = mgr.state_shards[kind]
        items = (self.state_item_lens or [])[kind] if kind < len(self.state_item_lens or []) \
            else None
        if my_shards is None or their_shards is None or items is None or \
                len(their_shards) != len(my_shards) or len(items) != len(my_shards):
            raise kvx.InvalidArgument(
                f"room {self.room}: state buffer {kind} ({mgr.state_types[kind]}) moves only "
                f"between equal attention TP sizes ({my_tp} here, {self.tp} at the decode)")
        if mine.size != 1 or theirs.size != 1:
            raise kvx.InvalidArgument(f"room {self.room}: a Mamba state is one slot; "
                                      f"{mine.size} here, {theirs.size} at the decode")
        local, remote_rows = [], []
        for tensor, (shard, theirs_shard) in enumerate(zip(my_shards, their_shards)):
            mine_item, theirs_item = mgr.state[kind].item_lens[tensor], items[tensor]
            for p_at, d_at, length in state_slices.slices((shard,), my_rank, my_tp,
                                                          (theirs_shard,), self.rank, self.tp):
                local.append((mgr.state[kind].regions[tensor], int(mine[0]) * mine_item + p_at,
                              length))
                remote_rows.append((remote.regions[tensor], int(theirs[0]) * theirs_item + d_at,
                                    length))
        shape = (len(local), 3)
        return (np.array(local, dtype=np.uint64).reshape(shape),
                np.array(remote_rows, dtype=np.uint64).reshape(shape))
