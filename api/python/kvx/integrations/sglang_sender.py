"""The prefill side of one SGLang request (sglang.py). Messages between the two sides, each a
kvx notification naming the request's room:
  meta     decode -> prefill  {"peer", "runs": its pages as runs, "aux": its aux slot or None,
                              "prefix": the tokens it holds already (decode_prefix_len),
                              "rank", "tp": the decode rank and its attention TP size,
                              "required": how many decode ranks' metas this rank waits for,
                              "item_lens": a page's bytes in each of its KV buffers,
                              "state": per state buffer type its indices or None,
                              "dummy": MLA, another prefill rank writes the pages}
  chunk    prefill -> decode  {"pages": n, "aux": bool, "state": bool}, sent with a chunk's
                              data
  failed   prefill -> decode  {"why"}: a write failed; none of the room's is in flight
  abort    either way         prefill -> decode: cancelled, nothing in flight;
                              decode -> prefill: cancel, then answer
  aborted  prefill -> decode  nothing more lands for the room"""
import time

import numpy as np

import kvx
from kvx.integrations.sglang_destination import Destination
from kvx.integrations.sglang_upstream import BaseKVSender, KVPoll, KVTransferMetric


class KvxKVSender(BaseKVSender):
    """The prefill side of one request (`bootstrap_room`), as SGLang makes a backend's sender:
    it waits for the metadata of every decode rank it serves (one, or decode TP / prefill TP
    of them: sglang_heads.py) and writes each its part of every chunk. `conclude_state` is
    the final poll state once there is one."""

    def __init__(self, mgr, bootstrap_addr, bootstrap_room, dest_tp_ranks=None, pp_rank=0,
                 req_has_disagg_prefill_dp_rank=False):
        self.mgr, self.room = mgr, bootstrap_room
        self.conclude_state = None
        self.prefix = 0        # decode_prefix_len, from the decode's metadata
        self.started = None    # when the first chunk was posted
        self.moved = 0         # bytes posted
        self.destinations = []  # Destination, in the order their metas came
        self.required = None   # how many the decode said there are
        self.total = None
        self.aux_index = None
        self.sent = 0
        self.transfers = []    # (transfer, local list, remote list) in flight
        self.error = None
        self.finished = False  # the last chunk was posted
        mgr.attach(bootstrap_room, self)

    @property
    def peer(self):
        """The first decode rank's peer name (None before its meta came)."""
        return self.destinations[0].peer if self.destinations else None

    def _ready(self):
        return self.required is not None and len(self.destinations) >= self.required

    def init(self, num_kv_indices, aux_index=None):
        self.total = int(num_kv_indices)
        self.aux_index = aux_index

    def pop_decode_prefix_len(self):
        """The tokens the decode holds already (its radix cache): SGLang sends from there."""
        prefix, self.prefix = self.prefix, 0
        return prefix

    def should_send_kv_chunk(self, num_pages, last_chunk):
        """The last chunk goes even when empty: it carries the aux item and ends the room."""
        return num_pages > 0 or last_chunk

    def get_transfer_metric(self):
        latency = None if self.started is None else time.monotonic() - self.started
        return KVTransferMetric(transfer_latency_s=latency, transfer_total_bytes=self.moved)

    def on_message(self, kind, peer, body):
        if kind == "meta" and all(d.peer != peer for d in self.destinations):
            try:
                destination = Destination.of(self.room, peer, body, self.mgr.kv.item_lens)
                required = max(1, int(body.get("required") or 1))
                prefix = int(body.get("prefix") or 0)
            except (AttributeError, KeyError, TypeError, ValueError) as error:
                self.error = self.error or kvx.InvalidArgument(
                    f"room {self.room}: malformed metadata from {peer}: {error!r}")
                return
            if not self.destinations:
                self.prefix = prefix
            self.required = required
            self.destinations.append(destination)
        elif kind == "abort":
            self._cancel()
            self.error = self.error or kvx.Cancelled(f"room {self.room}: the decode side "
                                                     "aborted")
            for destination in self.destinations:
                destination.told = destination.told or destination.peer == peer

    def _cancel(self):
        for transfer, local, remote in self.transfers:
            for release in (self.mgr.agent.cancel, self.mgr.agent.release):
                try:
                    release(transfer)
                except kvx.Error:
                    pass
            self._release_lists(local, remote)
        self.transfers = []

    def _release_lists(self, *lists):
        for list_id in lists:
            try:
                self.mgr.agent.release_list(list_id)
            except kvx.Error:
                pass

    def send(self, kv_indices, state_indices=None, token_position_offset=0):
        with self.mgr.lock:
            self.mgr.pump()
            if not self._ready():
                raise kvx.FailedPrecondition(f"room {self.room}: the decode's metadata has not "
                                             "all come (poll() says WaitingForInput once it "
                                             "has)")
            if self.error is not None:
                return
            pages = np.asarray(kv_indices, dtype=np.int64)
            for destination in self.destinations:
                if not destination.dummy and \
                        destination.pages.size < self.sent + pages.size:
                    raise kvx.InvalidArgument(f"room {self.room}: {self.sent + pages.size} "
                                              f"pages sent, the decode rank "
                                              f"{destination.rank} allocated "
                                              f"{destination.pages.size}")
            first = self.sent
            self.sent += pages.size
            last = self.total is None or self.sent >= self.total
            for destination in self.destinations:
                if self.error is None and not destination.dummy:
                    self._post(destination, pages,
                               destination.pages[first:first + pages.size], last,
                               state_indices)
            self.finished = last

    def _post(self, destination, pages, dst, last, state_indices):
        lists, transfer = [], None
        try:
            remote_kv, remote_aux, remote_state = self.mgr.remote(destination.peer,
                                                                  destination.item_lens)
            if dst.size and dst.max() >= min(remote_kv.items, default=0):
                raise kvx.InvalidArgument(f"room {self.room}: the decode's pages end at "
                                          f"{min(remote_kv.items, default=0)}")
            kv_local, kv_remote = destination.kv_rows(self.mgr, pages, dst, remote_kv)
            local_rows, remote_rows = [kv_local], [kv_remote]
            aux = last and self.aux_index is not None and destination.aux is not None and \
                bool(self.mgr.aux.regions)
            if aux:
                local_rows.append(self.mgr.aux.rows([self.aux_index], [1]))
                remote_rows.append(remote_aux.rows([destination.aux], [1]))
            state = last and destination.state is not None and state_indices is not None
            if state:
                more_local, more_remote = destination.state_rows(self.mgr, state_indices,
                                                                 remote_state)
                local_rows += more_local
                remote_rows += more_remote
            local_rows, remote_rows = np.concatenate(local_rows), np.concatenate(remote_rows)
            note = {"pages": int(pages.size), "aux": aux, "state": state}
            if len(local_rows) == 0:  # an empty last chunk: its count alone
                self.mgr.send_note(destination.peer, "chunk", self.room, note)
                return
            lists.append(self.mgr.agent.prepare_local_list(local_rows))
            lists.append(self.mgr.agent.prepare_remote_list(destination.peer, remote_rows))
            indices = np.arange(len(local_rows), dtype=np.uint32)
            transfer = self.mgr.agent.make_transfer(
                kvx.WRITE, lists[0], indices, lists[1], indices,
                notification=self.mgr.note("chunk", self.room, note))
            self.mgr.agent.post(transfer)
            self.started = self.started or time.monotonic()
            self.moved += int(local_rows[:, 2].sum())
        except kvx.Error as error:
            if transfer is not None:
                self.mgr.agent.release(transfer)
            self._release_lists(*lists)
            self.error = error
            return
        self.transfers.append((transfer, lists[0], lists[1]))

    def _settle(self):
        """Forgets the finished writes; a failed one fails the request."""
        pending = []
        for transfer, local, remote in self.transfers:
            state, why = self.mgr.agent.poll(transfer)
            if state in ("done", "failed"):
                if state == "failed" and self.error is None:
                    self.error = kvx.PeerFailed(f"room {self.room}: {why}")
                self.mgr.agent.release(transfer)
                self._release_lists(local, remote)
            else:
                pending.append((transfer, local, remote))
        self.transfers = pending

    def _tell(self, kind, body=None):
        """Tells every decode rank not yet told that the room failed."""
        for destination in self.destinations:
            if not destination.told:
                destination.told = True
                try:
                    self.mgr.send_note(destination.peer, kind, self.room, body)
                except kvx.Error:
                    pass  # that decode is gone

    def poll(self):
        with self.mgr.lock:
            self.mgr.pump()
            self._settle()
            gone = [d.peer for d in self.destinations if not self.mgr.alive(d.peer)]
            if self.error is None and gone:
                self._cancel()
                self.error = kvx.PeerFailed(f"room {self.room}: the decode {gone[0]} is gone")
            if self.error is not None:
                # SGLang polls a Failed sender no more: the rest of its writes are cancelled
                # (none lands after) and the decode ranks are told now, not on a later poll.
                self._cancel()
                self.conclude_state = KVPoll.Failed
                self._tell("failed", {"why": str(self.error)})
                return KVPoll.Failed
            if not self._ready():
                return KVPoll.Bootstrapping
            if not self.finished and self.sent == 0:
                return KVPoll.WaitingForInput
            if self.finished and not self.transfers:
                self.conclude_state = KVPoll.Success
                return KVPoll.Success
            return KVPoll.Transferring

    def failure_exception(self):
        raise self.error or kvx.InternalError(f"room {self.room} did not fail")

    def abort(self):
        """Cancels what is in flight (no byte lands after), then tells the decode ranks."""
        with self.mgr.lock:
            self._cancel()
            self._tell("abort")
            self.error = self.error or kvx.Cancelled(f"room {self.room}: aborted")
            self.conclude_state = KVPoll.Failed

    def clear(self):
        with self.mgr.lock:
            self._cancel()
            self.mgr.detach(self.room, self)
