"""The prefill instance in another process and the request flow that the SGLang connector
tests share."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine_process import EngineProcess  # noqa: E402
from fake_sglang import AUX_SLOTS  # noqa: E402
from kvx.integrations.sglang import KVPoll, KvxKVReceiver  # noqa: E402

DECODE_PAGES = 300


class PrefillProcess(EngineProcess):
    """sglang_prefill_engine.py (`prefix`, `env`: as EngineProcess takes them); `address`
    is its bootstrap server's."""

    def __init__(self, data_path, tp_size=1, page_size=1, state=False, prefix=(), env=None):
        super().__init__("sglang_prefill_engine.py", data_path, tp_size, page_size,
                         *([{True: "state"}.get(state, state)] if state else []), prefix=prefix,
                         env=env)
        self.address = self.expect("BOOTSTRAP", timeout=30).split()[1]


def poll_until(party, states, timeout=20):
    """Polls a sender or receiver until its state is one of `states` (or `timeout` s went):
    the last state."""
    deadline = time.monotonic() + timeout
    state = party.poll()
    while state not in states and time.monotonic() < deadline:
        time.sleep(0.002)
        state = party.poll()
    return state


class SglangRequests:
    """A unittest.TestCase mixin: one request sent by a PrefillProcess, SGLang's calls in
    order, every page, the aux slot and the state items compared."""

    def command_and_check(self, prefill, buffers, mgr, room, pages, chunk, seed):
        self.request_across(prefill, [(buffers, mgr)], room, pages, chunk, seed)

    def request_across(self, prefill, ranks, room, pages, chunk, seed):
        """One request read by every decode rank of `ranks` ((buffers, manager) by TP rank):
        each its own receiver, as SGLang's decode ranks each make one."""
        prefill.command(f"send {room} {pages} {seed} {chunk}")
        receivers = [KvxKVReceiver(mgr, prefill.address, room) for _, mgr in ranks]
        for receiver in receivers:
            self.assertEqual(receiver.poll(), KVPoll.Bootstrapping)
            receiver.init(0)
            self.assertEqual(receiver.poll(), KVPoll.WaitingForInput)
        # Scattered decode pages: runs of several lengths, out of order.
        dst = ([p for p in range(100 + room, 100 + room + pages // 2)] +
               [p for p in range(10, 10 + pages - pages // 2)][::-1])
        slot = (room + 5) % AUX_SLOTS
        for (buffers, _), receiver in zip(ranks, receivers):
            receiver.send_metadata(dst, aux_index=slot, state_indices=buffers.state_indices(
                room, decode=True) if buffers.state else None)
        for (buffers, _), receiver in zip(ranks, receivers):
            self.assertEqual(poll_until(receiver, (KVPoll.Success, KVPoll.Failed)),
                             KVPoll.Success, receiver.error)
            self.assertTrue(buffers.matches(dst, seed), f"room {room}, rank {buffers.rank}")
            self.assertTrue(buffers.aux_matches(slot, seed), f"room {room}'s aux slot")
            if buffers.state:
                self.assertTrue(buffers.state_matches(buffers.state_indices(room, decode=True),
                                                      seed),
                                f"room {room}'s state items")
        said = prefill.expect(f"SENT {room}").split()[2:]
        self.assertEqual(said, [str(KVPoll.Success)] * len(said))
