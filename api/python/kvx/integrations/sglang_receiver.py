"""The decode side of one SGLang request (sglang.py; the messages: sglang_sender.py)."""
import logging
import time

import kvx
from kvx.integrations.sglang_runs import runs
from kvx.integrations.sglang_upstream import BaseKVReceiver, KVPoll

log = logging.getLogger("kvx.sglang")


class KvxKVReceiver(BaseKVReceiver):
    """The decode side of one request: the prefill whose node's bootstrap server is at
    `bootstrap_addr`, room `bootstrap_room`. `conclude_state` is the final poll state once
    there is one (SGLang reads it)."""

    def __init__(self, mgr, bootstrap_addr, bootstrap_room=None):
        self.mgr, self.address, self.room = mgr, bootstrap_addr, bootstrap_room
        self.peer = None
        self.conclude_state = None
        self.state = KVPoll.Bootstrapping
        self.error = None
        self.expected = None   # pages to arrive
        self.arrived = 0
        self.aux_expected = False
        self.aux_arrived = False
        self.deadline = None
        self.answered = False  # the prefill answered an abort: nothing more lands
        self.writer = None     # how the prefill writes here (peer_process.Writer), once asked
        self.ending = None     # the failure, while a direct writer may still write
        mgr.attach(bootstrap_room, self)

    def init(self, prefill_dp_rank=0):
        """Connects to the prefill rank holding this rank's KV (asked of the bootstrap
        server); a failure makes poll() say Failed."""
        try:
            self.peer = self.mgr.connect(self.mgr.rank_address(self.address, prefill_dp_rank))
            self.mgr.remote(self.peer)  # the prefill exposes matching buffers
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
                if state_indices is not None and len(state_indices):
                    raise kvx.InvalidArgument("kvx's SGLang backend does not move state "
                                              "buffers (Mamba, SWA)")
                self.expected = len(kv_indices)
                self.aux_expected = aux_index is not None and bool(self.mgr.aux.regions)
                self.deadline = time.monotonic() + self.mgr.transfer_timeout
                self.writer = self.mgr.writers.of(self.peer)
                self.mgr.send_note(self.peer, "meta", self.room,
                                   {"peer": self.mgr.agent.name, "runs": runs(kv_indices),
                                    "aux": None if aux_index is None else int(aux_index),
                                    "prefix": int(decode_prefix_len or 0)})
                self.state = KVPoll.Transferring
            except kvx.Error as error:
                self._fail(error)

    def on_message(self, kind, peer, body):
        if peer != self.peer:
            return
        if kind == "chunk":
            self.arrived += int(body["pages"])
            self.aux_arrived = self.aux_arrived or bool(body.get("aux"))
        elif kind == "aborted":
            self.answered = True
        elif kind == "abort" and self.state == KVPoll.Transferring:
            self.answered = True  # it cancelled its writes before saying so
            self._fail(kvx.Cancelled(f"room {self.room}: the prefill side aborted"))
        elif kind == "failed" and self.state == KVPoll.Transferring:
            self.answered = True
            self._fail(kvx.PeerFailed(f"room {self.room}: the prefill's write failed: "
                                      f"{body.get('why')}"))

    def _fail(self, error):
        self.error = self.error or error
        self.state = self.conclude_state = KVPoll.Failed
        self.mgr.detach(self.room, self)

    def poll(self):
        with self.mgr.lock:
            self.mgr.pump()
            if self.state != KVPoll.Transferring:
                return self.state
            if self.ending is not None:
                if self._writes_over():
                    self._fail(self.ending)
            elif self.arrived >= self.expected and (self.aux_arrived or not self.aux_expected):
                self.state = self.conclude_state = KVPoll.Success
                self.mgr.detach(self.room, self)
            elif not self.mgr.alive(self.peer):
                self._end(kvx.PeerFailed(f"room {self.room}: the prefill {self.peer} is gone"))
            elif time.monotonic() >= self.deadline:
                self._stop_writes()
                self._end(kvx.TimedOut(f"room {self.room}: the KV did not arrive within "
                                       f"{self.mgr.transfer_timeout:g} s"))
            return self.state

    def _writes_over(self):
        """Whether no byte of the prefill's writes can land any more."""
        return self.answered or self.writer is None or self.writer.stopped()

    def _end(self, error):
        """Failed, once no byte can land any more; until then the pages stay (Transferring)."""
        if self._writes_over():
            self._fail(error)
            return
        self.ending = error
        log.warning("kvx: room %s: holding its pages until the prefill %s (%s) ends: it copies "
                    "into them itself, so dropping its link does not stop a write it is in the "
                    "middle of", self.room, self.peer, self.writer.describe())

    def failure_exception(self):
        raise self.error or kvx.InternalError(f"room {self.room} did not fail")

    def _stop_writes(self):
        """Returns once no byte of this room lands any more: the prefill answered an abort,
        or (after abort_timeout) the link to it was dropped."""
        if self.answered or not self.mgr.alive(self.peer):
            return
        try:
            self.mgr.send_note(self.peer, "abort", self.room)
            deadline = time.monotonic() + self.mgr.abort_timeout
            while not self.answered and time.monotonic() < deadline and \
                    self.mgr.alive(self.peer):
                self.mgr.pump()
                time.sleep(0.001)
        except kvx.Error:
            pass
        if not self.answered and self.mgr.alive(self.peer):
            try:
                self.mgr.agent.disconnect(self.peer)
            except kvx.Error:
                pass

    def abort(self):
        """SGLang frees the request's pages once this returns: see _stop_writes."""
        with self.mgr.lock:
            if self.state == KVPoll.Transferring:
                self._stop_writes()
                if not self._writes_over():
                    log.warning("kvx: room %s aborted while the prefill %s (%s), which copies "
                                "into its pages itself, has not said it stopped: SGLang reuses "
                                "them now", self.room, self.peer, self.writer.describe())
            self.error = self.error or kvx.Cancelled(f"room {self.room}: aborted")
            self.state = KVPoll.Failed
            self.mgr.detach(self.room, self)

    def clear(self):
        with self.mgr.lock:
            self.mgr.detach(self.room, self)
