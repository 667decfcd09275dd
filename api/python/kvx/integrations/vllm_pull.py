"""Pull for kvx's vLLM connector (vllm.py, mode "pull", the default): the decode worker reads
a request's blocks from the prefill workers holding its heads, in one transfer per prefill
worker whose notification tells that worker its blocks may go; blocks never read go when
their lease ends."""
import logging

import kvx
from kvx.integrations import vllm_messages as messages
from kvx.integrations import vllm_heads as heads
from kvx.integrations.vllm_groups import flat
from kvx.integrations.vllm_layout import (check_compatible, check_covered, layer_map,
                                           pair_indices)
from kvx.integrations.vllm_stats import TransferTally

log = logging.getLogger("kvx.vllm")


class PullReader:
    """The decode worker's side. Thread: the worker's."""

    def __init__(self, agent, links, layout, tp_rank, tp_size, pp_size=1):
        self._agent = agent
        self._links = links
        self._layout = layout
        self._tp_rank, self._tp_size = tp_rank, tp_size
        self._pp_size = pp_size  # this decode's pipeline stages: each stage's workers read
        self._reading = {}  # request id -> ([transfer ids], local block ids)
        self.tally = TransferTally(tp_rank)

    def note(self, spec, source):
        """The `read` message of `spec`'s prefill request to `source`'s prefill worker: how
        many decode workers tell it (those of every stage here), and the request."""
        return messages.read(self._pp_size * heads.contacted_by(
            source.rank, self._tp_size, len(spec.remote_addresses), self._layout.total_heads,
            self._layout.state is not None), spec.remote_request_id)

    def release(self, spec, sources):
        """Nothing to read (a whole prefix hit): the prefill workers may free the blocks."""
        try:
            for address, source, _ in sources:
                self._agent.send_notification(self._links.connected(address),
                                              self.note(spec, source))
        except kvx.Error as error:  # the prefill is gone: its lease frees its blocks
            log.warning("kvx: could not release prefill blocks of %s: %s", spec.request_id,
                        error)

    def read(self, spec, sources):
        """Posts the reads of `spec`; raises (nothing left in flight) if one cannot start."""
        transfers = []
        try:
            if [len(ids) for ids in spec.local_block_ids] != \
                    [len(ids) for ids in spec.remote_block_ids]:
                raise kvx.InvalidArgument(
                    f"request {spec.request_id}: local blocks by KV cache group "
                    f"{[len(ids) for ids in spec.local_block_ids]} for remote ones "
                    f"{[len(ids) for ids in spec.remote_block_ids]}")
            mine = self._layout.describe()
            check_covered(mine, [theirs for _, _, theirs in sources], spec.request_id)
            for _, _, theirs in sources:  # theirs: that prefill stage's layout
                check_compatible(mine, theirs)
                if theirs["tp_size"] != len(spec.remote_addresses):
                    raise kvx.InvalidArgument(
                        f"request {spec.request_id}: the prefill's cache is of TP "
                        f"{theirs['tp_size']}, its kv_transfer_params name "
                        f"{len(spec.remote_addresses)} workers")
            for address, source, theirs in sources:
                peer = self._links.connected(address)
                if not source.count and not mine["state"]:  # none of this worker's heads
                    self._agent.send_notification(peer, self.note(spec, source))
                    continue
                pair = self._links.lists(peer, theirs, source, decode_is_mine=True)
                here, there, _, states = pair_indices(
                    spec.local_block_ids, spec.remote_block_ids, layer_map(mine, theirs),
                    mine["num_blocks"], theirs["num_blocks"], pair.per_block,
                    stateful=mine["stateful"], used=(pair.used, pair.state_used))
                if not len(here):  # nothing of this worker's there (heads, state, stage)
                    self._agent.send_notification(peer, self.note(spec, source))
                    continue
                transfer = self._agent.make_transfer(kvx.READ, pair.local, here, pair.remote,
                                                     there,
                                                     notification=self.note(spec, source))
                transfers.append(transfer)
                self._agent.post(transfer)
                self.tally.posted(transfer, len(here), pair.moved_bytes(len(here), states))
            self._reading[spec.request_id] = (transfers, flat(spec.local_block_ids))
        except kvx.Error:
            for transfer in transfers:
                self._agent.cancel(transfer)
                self._agent.release(transfer)
                self.tally.ended(transfer, False)
            raise

    def poll(self):
        """[(request id, its blocks, the failure or None)] of reads that ended."""
        done = []
        for request_id, (transfers, blocks) in list(self._reading.items()):
            states = [self._agent.poll(t) for t in transfers]
            if all(state in ("done", "failed") for state, _ in states):
                failures = [why for state, why in states if state == "failed"]
                for transfer, (state, _) in zip(transfers, states):
                    self._agent.release(transfer)
                    self.tally.ended(transfer, state == "done")
                del self._reading[request_id]
                done.append((request_id, blocks, failures[0] if failures else None))
        return done


class ReadLease:
    """The prefill worker's side: a finished request's blocks wait for their readers, or for
    the lease to end. Thread: the worker's."""

    def __init__(self, lease):
        self._lease = lease
        self._sending = {}  # request id -> [lease deadline, reads seen, reads expected]
        self._early = {}    # request id -> (reads seen, expected) before its lease began

    def start(self, request_id, deadline):
        seen, expected = self._early.pop(request_id, (0, None))
        self._sending[request_id] = [deadline, seen, expected]

    def on_read(self, expected, request_id):
        if request_id in self._sending:
            entry = self._sending[request_id]
            entry[1] += 1
            entry[2] = expected
        else:
            seen, _ = self._early.get(request_id, (0, None))
            self._early[request_id] = (seen + 1, expected)

    def on_alive(self, request_id, now):
        """The decode still waits to read the request: its lease starts again."""
        if request_id in self._sending:
            entry = self._sending[request_id]
            entry[0] = max(entry[0], now + self._lease)

    def poll(self, now):
        """The requests whose blocks may go (done sending)."""
        done = set()
        for request_id, (deadline, seen, expected) in list(self._sending.items()):
            read = expected is not None and seen >= expected
            if read or deadline <= now:
                if not read:
                    log.warning("kvx: the lease of %s's prefill blocks ended unread",
                                request_id)
                done.add(request_id)
                del self._sending[request_id]
        return done
