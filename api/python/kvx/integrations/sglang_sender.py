"""The prefill side of one SGLang request (sglang.py). Messages between the two sides, each a
kvx notification naming the request's room:
  meta     decode -> prefill  {"peer", "runs": its pages as runs, "aux": its aux slot or None,
                              "prefix": the tokens it holds already (decode_prefix_len)}
  chunk    prefill -> decode  {"pages": n, "aux": bool}, sent with a chunk's data
  failed   prefill -> decode  {"why"}: a write failed; none of the room's is in flight
  abort    either way         prefill -> decode: cancelled, nothing in flight;
                              decode -> prefill: cancel, then answer
  aborted  prefill -> decode  nothing more lands for the room"""
import time

import numpy as np

import kvx
from kvx.integrations.sglang_runs import expand, paired_runs
from kvx.integrations.sglang_upstream import BaseKVSender, KVPoll, KVTransferMetric


class KvxKVSender(BaseKVSender):
    """The prefill side of one request (`bootstrap_room`), as SGLang makes a backend's sender.
    `conclude_state` is the final poll state once there is one."""

    def __init__(self, mgr, bootstrap_addr, bootstrap_room, dest_tp_ranks=None, pp_rank=0,
                 req_has_disagg_prefill_dp_rank=False):
        self.mgr, self.room = mgr, bootstrap_room
        self.conclude_state = None
        self.prefix = 0        # decode_prefix_len, from the decode's metadata
        self.started = None    # when the first chunk was posted
        self.moved = 0         # bytes posted
        self.peer = None
        self.dst_pages = None
        self.dst_aux = None
        self.total = None
        self.aux_index = None
        self.sent = 0
        self.transfers = []    # (transfer, local list, remote list) in flight
        self.error = None
        self.told = False      # the decode was told of the failure
        self.finished = False  # the last chunk was posted
        mgr.attach(bootstrap_room, self)

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
        if kind == "meta" and self.dst_pages is None:
            self.peer = peer
            self.dst_pages = expand(body["runs"])
            self.dst_aux = body.get("aux")
            self.prefix = int(body.get("prefix") or 0)
        elif kind == "abort":
            self._cancel()
            self.error = self.error or kvx.Cancelled(f"room {self.room}: the decode side "
                                                     "aborted")
            self.told = True

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
            if self.dst_pages is None:
                raise kvx.FailedPrecondition(f"room {self.room}: no decode metadata yet (poll() "
                                             "says WaitingForInput once it came)")
            if state_indices is not None and len(state_indices):
                raise kvx.InvalidArgument("kvx's SGLang backend does not move state buffers")
            if self.error is not None:
                return
            pages = np.asarray(kv_indices, dtype=np.int64)
            dst = self.dst_pages[self.sent:self.sent + pages.size]
            if dst.size != pages.size:
                raise kvx.InvalidArgument(f"room {self.room}: {self.sent + pages.size} pages "
                                          f"sent, the decode side allocated "
                                          f"{self.dst_pages.size}")
            self.sent += pages.size
            last = self.total is None or self.sent >= self.total
            self._post(pages, dst, last)

    def _post(self, pages, dst, last):
        lists, transfer = [], None
        try:
            remote_kv, remote_aux = self.mgr.remote(self.peer)
            src_starts, dst_starts, counts = paired_runs(pages, dst)
            if counts.size and (dst_starts + counts).max() > min(remote_kv.items, default=0):
                raise kvx.InvalidArgument(f"room {self.room}: the decode's pages end at "
                                          f"{min(remote_kv.items, default=0)}")
            local_rows = [self.mgr.kv.rows(src_starts, counts)]
            remote_rows = [remote_kv.rows(dst_starts, counts)]
            aux = last and self.aux_index is not None and self.dst_aux is not None and \
                bool(self.mgr.aux.regions)
            if aux:
                local_rows.append(self.mgr.aux.rows([self.aux_index], [1]))
                remote_rows.append(remote_aux.rows([self.dst_aux], [1]))
            local_rows, remote_rows = np.concatenate(local_rows), np.concatenate(remote_rows)
            if len(local_rows) == 0:  # an empty last chunk: its count alone
                self.mgr.send_note(self.peer, "chunk", self.room, {"pages": 0, "aux": False})
                self.finished = last
                return
            lists.append(self.mgr.agent.prepare_local_list(local_rows))
            lists.append(self.mgr.agent.prepare_remote_list(self.peer, remote_rows))
            indices = np.arange(len(local_rows), dtype=np.uint32)
            transfer = self.mgr.agent.make_transfer(
                kvx.WRITE, lists[0], indices, lists[1], indices,
                notification=self.mgr.note("chunk", self.room,
                                           {"pages": int(pages.size), "aux": aux}))
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
        self.finished = last

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

    def poll(self):
        with self.mgr.lock:
            self.mgr.pump()
            self._settle()
            if self.error is None and self.peer is not None and not self.mgr.alive(self.peer):
                self._cancel()
                self.error = kvx.PeerFailed(f"room {self.room}: the decode {self.peer} is gone")
            if self.error is not None:
                # SGLang polls a Failed sender no more: the rest of its writes are cancelled
                # (none lands after) and the decode is told now, not on a later poll.
                self._cancel()
                self.conclude_state = KVPoll.Failed
                if not self.told and self.peer is not None:
                    self.told = True
                    try:
                        self.mgr.send_note(self.peer, "failed", self.room,
                                           {"why": str(self.error)})
                    except kvx.Error:
                        pass  # the decode is gone
                return KVPoll.Failed
            if self.dst_pages is None:
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
        """Cancels what is in flight (no byte lands after), then tells the decode."""
        with self.mgr.lock:
            self._cancel()
            if self.peer is not None and not self.told:
                try:
                    self.mgr.send_note(self.peer, "abort", self.room)
                except kvx.Error:
                    pass
            self.told = True
            self.error = self.error or kvx.Cancelled(f"room {self.room}: aborted")
            self.conclude_state = KVPoll.Failed

    def clear(self):
        with self.mgr.lock:
            self._cancel()
            self.mgr.detach(self.room, self)
