"""Push for kvx's vLLM connector (vllm.py, mode "push"): the prefill worker writes each layer
of a request's blocks into the decode worker's blocks as soon as the layer is computed.

  - the decode worker, once its blocks are allocated, tells each prefill worker holding some
    of its heads where they go (a `dest` message: its block ids, its TP rank and size, its
    cache layout);
  - the prefill worker writes every layer computed so far (save_kv_layer) into those blocks,
    the next layers as they come, each write carrying a `pushed` message counting the
    (layer, block) pairs it placed; the decode's request is done when every pair of every
    prefill worker holding its heads has arrived;
  - a dest that comes after the layers were computed gets them in one write; one that comes
    before the prefill scheduled the request waits for it (until the lease ends);
  - the prefill's blocks go (done sending) once every decode worker reading from it has
    received them, or when the lease ends with some never asked for;
  - a write that fails tells the decode (push-failed) once none of the request's writes is
    in flight; a decode that gives up waiting asks for a cancel and counts its blocks failed
    only once the prefill answered that no byte will land any more. With no answer it drops
    the link to that prefill, which stops any write still coming where the decode's side
    places every byte (tcp, RDMA); where the prefill's process copies into the decode's
    cache itself (shared memory), a stopped process would finish its copy after that, so
    the blocks wait until that process has ended (peer_process.py).
With chunked prefill the request is planned in the step that computes its last chunk, with
every block it has then (vllm_chunks.py): that step's layers go as they are computed, each
with the blocks of the earlier chunks."""
import dataclasses
import logging
import re
import time

import kvx
from kvx.integrations import vllm_messages as messages
from kvx.integrations.peer_process import PeerWriters
from kvx.integrations import vllm_heads as heads
from kvx.integrations.vllm_groups import as_groups, flat
from kvx.integrations.vllm_layout import (check_compatible, layer_map, pair_indices,
                                           shared_units)
from kvx.integrations.vllm_stats import TransferTally

log = logging.getLogger("kvx.vllm")
_SUFFIX = re.compile(r"-[0-9a-f]{8}$")
_ABORTED = "the prefill aborted the request"


def base_request_id(request_id):
    """The id a request had before vLLM appended its random "-xxxxxxxx" (the id a proxy
    knows)."""
    return _SUFFIX.sub("", request_id)


@dataclasses.dataclass
class _Reader:
    peer: str
    dest: messages.Destination
    written: int = 0          # layers written so far
    transfers: list = dataclasses.field(default_factory=list)
    failure: str = None
    told: bool = False        # the decode was told the outcome (failure or cancel)
    maps: list = None         # layer_map() of this cache to the decode's, once checked


def _skips(dest):
    """A Destination's skip per KV cache group."""
    skip = dest.skip if isinstance(dest.skip, list) else [int(dest.skip or 0)]
    return skip + [0] * (len(dest.blocks) - len(skip))


@dataclasses.dataclass
class _Save:
    blocks: list              # the prefill's blocks of the request, a list per group
    computed: int = 0         # layers computed so far (in its blocks)
    launched: int = 0         # layers the forward has launched so far
    pending: list = dataclasses.field(default_factory=list)  # launched, not yet known done
    deadline: float = None    # the lease's end, once the request finished (request_finished)
    readers: dict = dataclasses.field(default_factory=dict)  # (peer, its request) -> _Reader
    expected: int = None      # readers expected (known from the first dest)
    aborted: bool = False     # vLLM freed its blocks: not done sending, nothing written


class PushWriter:
    """The prefill worker's side. Thread: the worker's."""

    def __init__(self, agent, links, layout, tp_rank, tp_size, lease):
        self._agent = agent
        self._links = links
        self._layout = layout
        self._tp_rank, self._tp_size = tp_rank, tp_size
        self._lease = lease
        self._saves = {}      # prefill request -> _Save
        self._early = {}      # prefill request -> ([(peer, Destination)], forget after)
        self._aborted = {}    # aborted prefill request (and its base id) -> forget after
        self.tally = TransferTally(tp_rank)

    def plan(self, request_id, blocks):
        """The request was scheduled here with these blocks: its layers come next."""
        save = _Save(as_groups(blocks))
        self._saves[request_id] = save
        early = self._early.pop(request_id, ([], None))[0]
        if base_request_id(request_id) != request_id:
            early += self._early.pop(base_request_id(request_id), ([], None))[0]
        for peer, dest in early:
            self._add_reader(request_id, save, peer, dest)

    def abort(self, request_id):
        """vLLM freed the request's blocks (aborted): nothing more is written from them, and
        each decode that asked is told the push failed once no write is in flight."""
        for key in {request_id, base_request_id(request_id)}:
            self._aborted[key] = time.monotonic() + self._lease
            for peer, dest in self._early.pop(key, ([], None))[0]:
                if flat(dest.blocks):
                    self._send(peer, messages.push_failed(dest.reply_to, _ABORTED))
        save = self._saves.get(request_id)
        if save is None:
            return
        save.aborted = True
        save.deadline = time.monotonic()
        for reader in save.readers.values():
            for transfer in reader.transfers:
                self._agent.cancel(transfer)
            reader.failure = reader.failure or _ABORTED

    def on_alive(self, request_id, now):
        """The decode still waits for the request's blocks: its lease starts again."""
        _, save = self._find(request_id)
        if save is not None and save.deadline is not None and not save.aborted:
            save.deadline = max(save.deadline, now + self._lease)

    def settling(self):
        """True while an aborted request's writes may still be in flight."""
        return any(save.aborted for save in self._saves.values())

    def _find(self, request_id):
        """(the prefill request a decode names, its save): by the id itself, or by the id vLLM
        gave it here (the one named with vLLM's random suffix, InputProcessor's)."""
        if request_id in self._saves:
            return request_id, self._saves[request_id]
        for own, save in self._saves.items():
            if base_request_id(own) == request_id and not save.aborted:
                return own, save
        return request_id, None

    def finished(self, request_id, deadline):
        """The request finished (vLLM keeps its blocks until done_sending): the lease runs."""
        if request_id in self._saves:
            self._saves[request_id].deadline = deadline

    def layer_saved(self, layer_index, ready=None):
        """The forward has launched layer `layer_index` (of KvLayout.save_order) of the
        requests planned this step: its blocks hold it once `ready()` is true (a CUDA event
        on the compute stream; None: at once). Each layer is written once it and the layers
        before it are ready."""
        for request_id, save in self._saves.items():
            if save.launched == layer_index:
                save.launched = layer_index + 1
                save.pending.append(ready)
                self._advance(request_id, save)

    def forward_done(self, ready=None):
        """The step's forward has launched every layer: the Mamba layers' states (which no
        save_kv_layer names) are final once `ready()` is."""
        for index in range(self._layout.saved_by_layer, len(self._layout.save_order)):
            self.layer_saved(index, ready)

    def _advance(self, request_id, save):
        """Counts the launched layers now computed, and writes them."""
        before = save.computed
        while save.pending and (save.pending[0] is None or save.pending[0]()):
            save.pending.pop(0)
            save.computed += 1
        if save.computed > before:
            for reader in save.readers.values():
                self._write(request_id, save, reader)

    def on_dest(self, peer, dest):
        request_id, save = self._find(dest.request)
        if save is None and dest.request in self._aborted:
            if flat(dest.blocks):
                self._send(peer, messages.push_failed(dest.reply_to, _ABORTED))
            return
        if save is None:
            entries, _ = self._early.get(dest.request, ([], None))
            self._early[dest.request] = (entries + [(peer, dest)],
                                         time.monotonic() + self._lease)
            return
        self._add_reader(request_id, save, peer, dest)

    def on_cancel(self, peer, request_id, decode_request):
        """The decode gave up: no byte lands after the `cancelled` answer."""
        request_id, save = self._find(request_id)
        reader = save.readers.get((peer, decode_request)) if save else None
        if reader is None:  # not scheduled here yet: its dest must not be served later
            entries, until = self._early.get(request_id, ([], None))
            self._early[request_id] = (
                [(p, d) for p, d in entries if (p, d.reply_to) != (peer, decode_request)],
                until or time.monotonic() + self._lease)
            reader = _Reader(peer, messages.Destination(request_id, decode_request, [], 0, 0,
                                                        0, {}))
            if save is not None:
                save.readers[(peer, decode_request)] = reader
        for transfer in reader.transfers:
            self._agent.cancel(transfer)
            self._agent.release(transfer)
            self.tally.ended(transfer, False)
        reader.transfers, reader.failure, reader.told = [], "cancelled by the decode", True
        self._send(peer, messages.cancelled(decode_request))

    def _add_reader(self, request_id, save, peer, dest):
        reader = _Reader(peer, dest)
        save.readers[(peer, dest.reply_to)] = reader
        try:
            if not isinstance(dest.pp_size, int) or isinstance(dest.pp_size, bool) or \
                    not 1 <= dest.pp_size <= 1024:
                raise kvx.InvalidArgument(f"request {request_id}: a decode of "
                                          f"{dest.pp_size!r} pipeline stages")
            # Every stage's decode workers that deal with this worker send a dest.
            save.expected = dest.pp_size * heads.contacted_by(
                self._tp_rank, dest.tp_size, self._tp_size, self._layout.total_heads,
                self._layout.state is not None)
            check_compatible(self._layout.describe(), dest.layout)
            reader.maps = layer_map(self._layout.describe(), dest.layout)
            dest.blocks = as_groups(dest.blocks)
            if flat(dest.blocks) and (len(dest.blocks) != len(save.blocks) or any(
                    skip + len(theirs) > len(mine) for skip, theirs, mine in
                    zip(_skips(dest), dest.blocks, save.blocks))):
                raise kvx.InvalidArgument(
                    f"request {request_id} has {[len(b) for b in save.blocks]} blocks here by "
                    f"KV cache group; the decode asked for {[len(b) for b in dest.blocks]} "
                    f"after the first {_skips(dest)}")
        except kvx.Error as error:
            reader.failure = str(error)
            return
        self._write(request_id, save, reader)

    def _write(self, request_id, save, reader):
        """Writes the layers computed and not yet written to `reader`."""
        layers = self._layout.save_order[reader.written:save.computed]
        if not layers or reader.failure or not flat(reader.dest.blocks):
            return
        reader.written = save.computed
        dest = reader.dest
        try:
            mine = [blocks[skip:skip + len(wanted)] for blocks, skip, wanted in
                    zip(save.blocks, _skips(dest), dest.blocks)]
            theirs = dest.layout
            for source in heads.contacts(dest.tp_rank, dest.tp_size, self._tp_size,
                                         self._layout.total_heads,
                                         self._layout.state is not None):
                if source.rank != self._tp_rank:
                    continue
                # A source's heads are the decode's from first_here, its own from first_there.
                mirrored = heads.Source(dest.tp_rank, source.first_there, source.first_here,
                                        source.count)
                pair = self._links.lists(reader.peer, theirs, mirrored, decode_is_mine=False)
                here, there, count, states = pair_indices(
                    mine, dest.blocks, reader.maps, self._layout.num_blocks,
                    theirs["num_blocks"], pair.per_block, layers, self._layout.stateful,
                    used=(pair.used, pair.state_used))
                if not len(here):  # none of these layers' groups has blocks to write
                    continue
                transfer = self._agent.make_transfer(
                    kvx.WRITE, pair.local, here, pair.remote, there,
                    notification=messages.pushed(count, dest.reply_to))
                reader.transfers.append(transfer)
                self._agent.post(transfer)
                self.tally.posted(transfer, len(here), pair.moved_bytes(len(here), states))
        except kvx.Error as error:
            reader.failure = str(error)
            self._links.forget(reader.peer)  # made again for the next request, if it came back

    def _settled(self, reader):
        """True once none of `reader`'s writes is in flight (failures recorded)."""
        pending = []
        for transfer in reader.transfers:
            state, why = self._agent.poll(transfer)
            if state in ("done", "failed"):
                if state == "failed" and reader.failure is None:
                    reader.failure = why or "the write failed"
                self._agent.release(transfer)
                self.tally.ended(transfer, state == "done")
            else:
                pending.append(transfer)
        reader.transfers = pending
        return not pending

    def poll(self, now):
        """The requests whose blocks may go (done sending)."""
        for request_id in [r for r, (_, until) in self._early.items() if until <= now]:
            del self._early[request_id]
        for request_id in [r for r, until in self._aborted.items() if until <= now]:
            del self._aborted[request_id]
        done = set()
        for request_id, save in list(self._saves.items()):
            self._advance(request_id, save)
            settled = True
            for reader in save.readers.values():
                if not self._settled(reader):
                    settled = False
                elif reader.failure and not reader.told:
                    log.warning("kvx: pushing the KV of %s failed: %s", request_id,
                                reader.failure)
                    self._send(reader.peer, messages.push_failed(reader.dest.reply_to,
                                                                 reader.failure))
                    reader.told = True
            if not settled or save.deadline is None:
                continue
            complete = all(r.failure or not flat(r.dest.blocks) or
                           r.written == len(self._layout.names) for r in save.readers.values())
            served = save.expected is not None and len(save.readers) >= save.expected
            if (served and complete) or save.deadline <= now:
                if not served and not save.aborted:
                    log.warning("kvx: the lease of %s's prefill blocks ended before every "
                                "decode worker asked for them", request_id)
                for reader in save.readers.values():
                    if flat(reader.dest.blocks) and not reader.told and \
                            reader.written < len(self._layout.names):
                        self._send(reader.peer, messages.push_failed(
                            reader.dest.reply_to, "the prefill's lease on its blocks ended"))
                if not save.aborted:
                    done.add(request_id)
                del self._saves[request_id]
        return done

    def _send(self, peer, text):
        try:
            self._agent.send_notification(peer, text)
        except kvx.Error as error:  # the decode is gone: it counts its blocks failed itself
            log.info("kvx: could not tell %s: %s", peer, error)


@dataclasses.dataclass
class _Arrival:
    blocks: list              # this worker's blocks the prefill writes (every group's)
    peers: list               # the prefill workers writing them
    expected: int             # (layer, block) pairs to come, over all of them
    deadline: float
    writers: dict             # peer -> peer_process.Writer
    arrived: int = 0
    failure: str = None
    cancel_deadline: float = None  # set once a cancel was asked for
    cancelled: set = dataclasses.field(default_factory=set)  # peers that answered it
    holding: bool = False     # said that its blocks wait for a writer's process to end


class PushReceiver:
    """The decode worker's side: a request's blocks arrive from the prefill workers holding
    its heads. Thread: the worker's."""

    def __init__(self, agent, layout, timeout, cancel_timeout, tally):
        self._agent = agent
        self._layout = layout
        self._timeout = timeout
        self._cancel_timeout = cancel_timeout
        self._arrivals = {}   # decode request -> _Arrival
        self._remote = {}     # decode request -> the prefill's request id
        self._writers = PeerWriters(agent)
        self.tally = tally    # the worker's (shared with its PushWriter)

    def expect(self, request_id, remote_request_id, blocks, writers):
        """The dest went to `writers` ((peer, its cache's describe(), whether it writes each
        KV cache group: heads of it, or a share of its Mamba states)): each writes its part of
        `blocks` in every layer of this cache it holds (a pipeline stage's)."""
        blocks = as_groups(blocks)
        mine = self._layout.describe()
        peers = [peer for peer, _, _ in writers]
        # A writer whose cache is not known here (a proxy named only its address) holds
        # every layer, as it does without pipeline parallelism.
        expected = sum(shared_units(layer_map(mine, theirs or mine), blocks, kinds)
                       for _, theirs, kinds in writers)
        self._arrivals[request_id] = _Arrival(
            flat(blocks), peers, expected,
            time.monotonic() + self._timeout, {peer: self._writers.of(peer) for peer in peers})
        self._remote[request_id] = remote_request_id

    def on_pushed(self, units, request_id):
        arrival = self._arrivals.get(request_id)
        if arrival is not None:
            arrival.arrived += units

    def on_failed(self, peer, request_id, why):
        """Prefill worker `peer` writes nothing more for it (and has nothing in flight): as good
        as its answer to a cancel."""
        arrival = self._arrivals.get(request_id)
        if arrival is None:
            return
        arrival.cancelled.add(peer)
        if arrival.failure is None:
            arrival.failure = why
            self._cancel_others(request_id, arrival)

    def on_cancelled(self, peer, request_id):
        arrival = self._arrivals.get(request_id)
        if arrival is not None:
            arrival.cancelled.add(peer)

    def _cancel_others(self, request_id, arrival):
        """Asks every prefill worker of the request that has not said it stopped to stop."""
        if arrival.cancel_deadline is not None:
            return
        arrival.cancel_deadline = time.monotonic() + self._cancel_timeout
        for peer in arrival.peers:
            if peer in arrival.cancelled:
                continue
            try:
                self._agent.send_notification(peer, messages.cancel(self._remote[request_id],
                                                                    request_id))
            except kvx.Error:
                pass  # gone: its link is down, nothing more lands from it

    def poll(self, now):
        """[(request id, its blocks, the failure or None)] of requests done receiving."""
        done = []
        peers = set(self._agent.peers())
        for request_id, arrival in list(self._arrivals.items()):
            if arrival.failure is None and arrival.arrived >= arrival.expected:
                done.append((request_id, arrival.blocks, None))
                del self._arrivals[request_id]
                del self._remote[request_id]
                continue
            gone = [p for p in arrival.peers if p not in peers]
            if arrival.failure is None and gone:
                arrival.failure = f"the prefill worker {gone[0]} left during the push"
            if arrival.failure is None and arrival.deadline <= now:
                arrival.failure = f"the push did not arrive within {self._timeout:g} s"
            if arrival.failure is None:
                continue
            self._cancel_others(request_id, arrival)
            # No byte may land once the blocks are handed back: each prefill worker answered
            # the cancel or is no longer linked (a removed peer's writes are dropped).
            waiting = [p for p in arrival.peers if p in peers and p not in arrival.cancelled]
            if waiting and arrival.cancel_deadline > now:
                continue
            for peer in waiting:
                log.warning("kvx: the prefill worker %s did not answer a cancel of %s; "
                            "dropping the link to it", peer, request_id)
                try:
                    self._agent.disconnect(peer)
                except kvx.Error:
                    pass
            # A writer that copies into this cache itself may be stopped mid-copy: dropping its
            # link does not stop that copy, only its answer or the end of its process does.
            unproven = [p for p in arrival.peers
                        if p not in arrival.cancelled and not arrival.writers[p].stopped()]
            if unproven:
                if not arrival.holding:
                    log.warning("kvx: holding the %d blocks of %s until the prefill worker %s "
                                "(%s) ends: it copies into this cache itself, so dropping its "
                                "link does not stop a write it is in the middle of",
                                len(arrival.blocks), request_id, unproven[0],
                                arrival.writers[unproven[0]].describe())
                    arrival.holding = True
                continue
            done.append((request_id, arrival.blocks, arrival.failure))
            del self._arrivals[request_id]
            del self._remote[request_id]
        return done
