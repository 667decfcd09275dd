"""The decode side of one SGLang request (sglang.py; the messages: sglang_sender.py)."""
import dataclasses
import logging
import time

import kvx
from kvx.integrations import sglang_heads as heads, sglang_state_shards as state_shards
from kvx.integrations.sglang_runs import runs
from kvx.integrations.sglang_upstream import BaseKVReceiver, KVPoll

log = logging.getLogger("kvx.sglang")


@dataclasses.dataclass
class Source:
    """One prefill rank that writes (part of) this request's pages here."""
    rank: int              # its attention TP rank
    peer: str
    dummy: bool = False    # MLA: another rank writes the pages; it is only told
    arrived: int = 0       # pages it said it wrote
    answered: bool = False  # it said nothing more of the room lands
    state_expected: bool = False  # it writes (its pieces of) the state items
    state_arrived: bool = False
    writer: object = None  # how it writes here (peer_process.Writer), once asked


class KvxKVReceiver(BaseKVReceiver):
    """The decode side of one request: the prefill whose node's bootstrap server is at
    `bootstrap_addr`, room `bootstrap_room`, read from each prefill rank that holds heads of
    this rank's (one where the TP sizes agree; sglang_heads.py). `conclude_state` is the final
    poll state once there is one (SGLang reads it)."""

    def __init__(self, mgr, bootstrap_addr, bootstrap_room=None):
        self.mgr, self.address, self.room = mgr, bootstrap_addr, bootstrap_room
        self.sources = []
        self.conclude_state = None
        self.state = KVPoll.Bootstrapping
        self.error = None
        self.expected = None   # pages to arrive from each real source
        self.aux_expected = self.aux_arrived = False
        self.state_expected = False
        self.deadline = None
        self.failing = None    # a source's failure, its other sources not yet stopped
        self.ending = None     # the failure, while a direct writer may still write
        mgr.attach(bootstrap_room, self)

    @property
    def peer(self):
        """The first prefill rank's peer name (it writes the aux item)."""
        return self.sources[0].peer if self.sources else None

    @property
    def answered(self):
        """Every prefill rank said nothing more of the room lands."""
        return bool(self.sources) and all(s.answered for s in self.sources)

    def init(self, prefill_dp_rank=0):
        """Connects to the prefill ranks holding this rank's KV (asked of the bootstrap
        server); a failure makes poll() say Failed."""
        try:
            prefill_tp = self.mgr.prefill_tp(self.address)
            layout = self.mgr.rank_layout
            for i, rank in enumerate(heads.targets(layout["attn_tp_rank"],
                                                   layout["attn_tp_size"], prefill_tp)):
                peer = self.mgr.connect(self.mgr.rank_address(self.address, prefill_dp_rank,
                                                              rank))
                self.mgr.remote(peer)  # the prefill exposes matching buffers
                self.sources.append(Source(rank, peer, dummy=self.mgr.is_mla_backend and i > 0))
            self.state = KVPoll.WaitingForInput
        except kvx.Error as error:
            self.mgr.forget_rank_address(self.address, prefill_dp_rank)
            self._fail(error)

    def send_metadata(self, kv_indices, aux_index=None, state_indices=None,
                      decode_prefix_len=None):
        with self.mgr.lock:
            if self.state != KVPoll.WaitingForInput:
                raise kvx.FailedPrecondition(f"room {self.room}: send_metadata after init() "
                                             "only")
            try:
                layout = self.mgr.rank_layout
                prefill_tp = self.mgr.prefill_tp(self.address)
                state = self._state_indices(state_indices, prefill_tp)
                self.expected = len(kv_indices)
                self.aux_expected = aux_index is not None and bool(self.mgr.aux.regions)
                self.state_expected = state is not None
                # Between TP sizes each prefill rank writes its pieces of the state items.
                split = prefill_tp != layout["attn_tp_size"]
                self.deadline = time.monotonic() + self.mgr.transfer_timeout
                page_runs = runs(kv_indices)
                for i, source in enumerate(self.sources):
                    source.writer = self.mgr.writers.of(source.peer)
                    source.state_expected = state is not None and (split or i == 0)
                    self.mgr.send_note(source.peer, "meta", self.room, {
                        "peer": self.mgr.agent.name, "runs": [] if source.dummy else page_runs,
                        "aux": None if aux_index is None or i else int(aux_index),
                        "prefix": int(decode_prefix_len or 0), "rank": layout["attn_tp_rank"],
                        "tp": layout["attn_tp_size"],
                        "required": heads.destinations(layout["attn_tp_size"], prefill_tp),
                        "item_lens": self.mgr.kv.item_lens, "dummy": source.dummy,
                        "state": state if source.state_expected else None,
                        "state_item_lens": [b.item_lens for b in self.mgr.state],
                        "state_shards": state_shards.wire(self.mgr.state_shards)})
                self.state = KVPoll.Transferring
            except kvx.Error as error:
                self._fail(error)

    def _state_indices(self, state_indices, prefill_tp):
        """The request's state buffer indices by type (lists or None), checked."""
        if state_indices is None or not any(i is not None and len(i) for i in state_indices):
            return None
        if len(state_indices) != len(self.mgr.state):
            raise kvx.InvalidArgument(f"room {self.room}: {len(state_indices)} state index "
                                      f"lists for the {len(self.mgr.state)} state buffer types "
                                      "registered")
        split = [kind for kind, (indices, shards) in
                 enumerate(zip(state_indices, self.mgr.state_shards))
                 if indices is not None and len(indices) and shards is None]
        if prefill_tp != self.mgr.rank_layout["attn_tp_size"] and split:
            kind = split[0]
            raise kvx.InvalidArgument(
                f"room {self.room}: state buffer {kind} ({self.mgr.state_types[kind]}) moves "
                f"only between equal attention TP sizes (Mamba states between others); the "
                f"prefill has {prefill_tp}, this decode {self.mgr.rank_layout['attn_tp_size']}")
        return [None if i is None else [int(x) for x in i] for i in state_indices]

    def on_message(self, kind, peer, body):
        source = next((s for s in self.sources if s.peer == peer), None)
        if source is None:
            return
        if kind == "chunk":
            try:
                pages = int(body["pages"])
            except (KeyError, TypeError, ValueError):
                self.failing = self.failing or kvx.InvalidArgument(
                    f"room {self.room}: a malformed chunk note from {peer}: {body!r}"[:300])
                return
            source.arrived += pages
            self.aux_arrived = self.aux_arrived or bool(body.get("aux"))
            source.state_arrived = source.state_arrived or bool(body.get("state"))
        elif kind == "aborted":
            source.answered = True
        elif kind in ("abort", "failed") and self.state == KVPoll.Transferring:
            source.answered = True  # it cancelled its writes before saying so
            self.failing = self.failing or (
                kvx.Cancelled(f"room {self.room}: the prefill side aborted") if kind == "abort"
                else kvx.PeerFailed(f"room {self.room}: the prefill's write failed: "
                                    f"{body.get('why') if isinstance(body, dict) else body}"))

    def _fail(self, error):
        self.error = self.error or error
        self.state = self.conclude_state = KVPoll.Failed
        self.mgr.detach(self.room, self)

    def _complete(self):
        return (all(s.dummy or s.arrived >= self.expected for s in self.sources) and
                (self.aux_arrived or not self.aux_expected) and
                all(s.state_arrived or not s.state_expected for s in self.sources))

    def poll(self):
        with self.mgr.lock:
            self.mgr.pump()
            if self.state != KVPoll.Transferring:
                return self.state
            gone = [s.peer for s in self.sources if not self.mgr.alive(s.peer)]
            if self.ending is not None:
                if self._writes_over():
                    self._fail(self.ending)
            elif self.failing is not None:
                self._stop_writes()  # the other prefill ranks' writes
                self._end(self.failing)
            elif self._complete():
                self.state = self.conclude_state = KVPoll.Success
                self.mgr.detach(self.room, self)
            elif gone:
                self._stop_writes()
                self._end(kvx.PeerFailed(f"room {self.room}: the prefill {gone[0]} is gone"))
            elif time.monotonic() >= self.deadline:
                self._stop_writes()
                self._end(kvx.TimedOut(f"room {self.room}: the KV did not arrive within "
                                       f"{self.mgr.transfer_timeout:g} s"))
            return self.state

    def _writes_over(self):
        """Whether no byte of the prefill ranks' writes can land any more."""
        return all(s.answered or s.writer is None or s.writer.stopped() for s in self.sources)

    def _end(self, error):
        """Failed, once no byte can land any more; until then the pages stay (Transferring)."""
        if self._writes_over():
            self._fail(error)
            return
        self.ending = error
        for source in self.sources:
            if not (source.answered or source.writer is None or source.writer.stopped()):
                log.warning("kvx: room %s: holding its pages until the prefill %s (%s) ends: "
                            "it copies into them itself, so dropping its link does not stop a "
                            "write it is in the middle of", self.room, source.peer,
                            source.writer.describe())

    def failure_exception(self):
        raise self.error or kvx.InternalError(f"room {self.room} did not fail")

    def _stop_writes(self):
        """Returns once no byte of this room lands any more: each prefill rank answered an
        abort, or (after abort_timeout) the link to it was dropped."""
        asked = [s for s in self.sources if not s.answered and self.mgr.alive(s.peer)]
        if not asked:
            return
        try:
            for source in asked:
                self.mgr.send_note(source.peer, "abort", self.room)
            deadline = time.monotonic() + self.mgr.abort_timeout
            while time.monotonic() < deadline and any(
                    not s.answered and self.mgr.alive(s.peer) for s in asked):
                self.mgr.pump()
                time.sleep(0.001)
        except kvx.Error:
            pass
        for source in asked:
            if not source.answered and self.mgr.alive(source.peer):
                try:
                    self.mgr.agent.disconnect(source.peer)
                except kvx.Error:
                    pass

    def abort(self):
        """SGLang frees the request's pages once this returns: see _stop_writes."""
        with self.mgr.lock:
            if self.state == KVPoll.Transferring:
                self._stop_writes()
                if not self._writes_over():
                    log.warning("kvx: room %s aborted while a prefill rank that copies into its "
                                "pages itself has not said it stopped: SGLang reuses them now",
                                self.room)
            self.error = self.error or kvx.Cancelled(f"room {self.room}: aborted")
            self.state = KVPoll.Failed
            self.mgr.detach(self.room, self)

    def clear(self):
        with self.mgr.lock:
            self.mgr.detach(self.room, self)
