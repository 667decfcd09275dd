# kvx-test-labels: python connector ucx multiprocess
"""kvx as SGLang's KV transfer backend (kvx.integrations.sglang), driven in the order SGLang's
disaggregation calls it: a prefill instance in another process (sglang_prefill_engine.py)
with a sender per request, and a decode instance here with a receiver per request, their poll
states checked at each step. Page size 1, decode pages scattered (sent as coalesced runs),
chunked sends, every byte of every page and of the request's aux slot compared, over shm, tcp
and the socket transport; attention TP sizes that differ (2 to 4 with pages of 2 tokens, 4 to
2, and heads replicated at either side: 2 to 8, 8 to 2), each token's bytes compared by model
head; state buffers (a Mamba-like slot and SWA-like pages per request; between TP sizes a
gated delta net's Mamba state, 2 to 1 and 1 to 2, every byte of each rank's shard compared,
and state buffers whose shards SGLang does not describe refused); an abort on the decode side fails the prefill's sender and returns
once the prefill answered (or, from a stopped prefill, once the link to it was dropped); a
receiver whose pages never come times out; one whose prefill is stopped over shared memory
keeps its pages until that process ends; a prefill killed during a request fails the decode's
receiver."""
import os
import signal
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from engine_process import wait_stopped  # noqa: E402
from fake_sglang import manager  # noqa: E402
from sglang_harness import DECODE_PAGES, PrefillProcess, SglangRequests, poll_until  # noqa: E402
from kvx.integrations.sglang import KVPoll, KvxKVReceiver, _expand, _runs  # noqa: E402
from kvx.integrations.sglang_runs import paired_runs  # noqa: E402

import kvx  # noqa: E402


def stopped_with_metadata(prefill, mgr, room, pages):
    """A receiver of `room` whose metadata reached the prefill, which is then stopped."""
    prefill.command(f"hold {room}")
    receiver = KvxKVReceiver(mgr, prefill.address, room)
    receiver.init(0)
    receiver.send_metadata(pages)
    prefill.expect(f"WAITING {room}")
    os.kill(prefill.process.pid, signal.SIGSTOP)
    wait_stopped(prefill.process.pid)
    return receiver


class SglangConnector(SglangRequests, unittest.TestCase):
    def test_runs(self):
        self.assertEqual(_runs([4, 5, 6, 9, 2, 3]), [[4, 3], [9, 1], [2, 2]])
        self.assertEqual(list(_expand([[4, 3], [9, 1], [2, 2]])), [4, 5, 6, 9, 2, 3])
        self.assertEqual(_runs([]), [])
        # One descriptor per run consecutive on both sides.
        starts, dst, counts = paired_runs([7, 8, 9, 3, 4], [20, 21, 30, 31, 32])
        self.assertEqual((list(starts), list(dst), list(counts)), ([7, 9, 3], [20, 30, 31],
                                                                   [2, 1, 2]))

    def exchange(self, data_path):
        prefill = PrefillProcess(data_path)
        buffers, mgr = manager("decode", DECODE_PAGES, data_path)
        try:
            for room, (pages, chunk) in enumerate([(40, 8), (7, 7), (130, 32)]):
                self.command_and_check(prefill, buffers, mgr, room, pages, chunk, seed=room + 3)
        finally:
            mgr.close()
            prefill.stop()
        self.assertEqual(prefill.process.returncode, 0)

    def test_shm(self):
        self.exchange("shm")

    def test_tcp(self):
        self.exchange("tcp")

    def test_socket(self):
        self.exchange("socket")

    def test_decode_abort_fails_the_sender(self):
        prefill = PrefillProcess("tcp")
        buffers, mgr = manager("decode", DECODE_PAGES, "tcp")
        try:
            prefill.command("hold 7")
            receiver = KvxKVReceiver(mgr, prefill.address, 7)
            receiver.init(0)
            receiver.send_metadata([1, 2, 3])
            receiver.abort()  # returns once the prefill answered
            self.assertTrue(receiver.answered)
            self.assertIn(receiver.peer, mgr.agent.peers())
            self.assertEqual(receiver.poll(), KVPoll.Failed)
            with self.assertRaises(kvx.Cancelled):
                receiver.failure_exception()
            self.assertEqual(prefill.expect("SENT 7"), f"SENT 7 {KVPoll.Failed}")
            # The prefill goes on serving the next request.
            self.command_and_check(prefill, buffers, mgr, 8, 5, 5, seed=1)
        finally:
            mgr.close()
            prefill.stop()

    def test_decode_abort_against_a_stopped_prefill(self):
        """No answer within abort_timeout: the link is dropped, which stops any write."""
        prefill = PrefillProcess("tcp")
        buffers, mgr = manager("decode", DECODE_PAGES, "tcp", abort_timeout=0.5)
        try:
            receiver = stopped_with_metadata(prefill, mgr, 11, [4, 5])
            started = time.monotonic()
            receiver.abort()
            self.assertGreaterEqual(time.monotonic() - started, 0.5)
            self.assertFalse(receiver.answered)
            self.assertNotIn(receiver.peer, mgr.agent.peers())
            os.kill(prefill.process.pid, signal.SIGCONT)
            # The prefill's sender sees its decode gone.
            self.assertEqual(prefill.expect("SENT 11"), f"SENT 11 {KVPoll.Failed}")
        finally:
            os.kill(prefill.process.pid, signal.SIGCONT)
            mgr.close()
            prefill.stop()

    def test_a_stopped_prefill_over_shm_keeps_the_pages_until_its_process_ends(self):
        """Over shared memory the prefill copies into these pages itself: stopped, it could
        finish a copy after its link is dropped, so the receiver says Failed (and SGLang reuses
        the pages) only once that process has ended."""
        prefill = PrefillProcess("shm")
        buffers, mgr = manager("decode", DECODE_PAGES, "shm", transfer_timeout=1.0,
                               abort_timeout=0.5)
        try:
            receiver = stopped_with_metadata(prefill, mgr, 13, [9, 10])
            # The pages time out (1 s), the abort gets no answer (0.5 s), the link is dropped:
            # still Transferring.
            until = time.monotonic() + 3.0
            while time.monotonic() < until:
                self.assertEqual(receiver.poll(), KVPoll.Transferring)
                time.sleep(0.01)
            self.assertFalse(receiver.answered)
            self.assertNotIn(receiver.peer, mgr.agent.peers())
            os.kill(prefill.process.pid, signal.SIGKILL)
            prefill.process.wait(timeout=10)
            self.assertEqual(poll_until(receiver, (KVPoll.Failed,), timeout=10), KVPoll.Failed)
            with self.assertRaises(kvx.TimedOut):
                receiver.failure_exception()
        finally:
            mgr.close()
            prefill.stop()

    def test_pages_that_never_come(self):
        prefill = PrefillProcess("tcp")
        buffers, mgr = manager("decode", DECODE_PAGES, "tcp", transfer_timeout=1.0)
        try:
            prefill.command("hold 12")
            receiver = KvxKVReceiver(mgr, prefill.address, 12)
            receiver.init(0)
            started = time.monotonic()  # the timeout runs from send_metadata
            receiver.send_metadata([6, 7, 8])
            self.assertEqual(poll_until(receiver, (KVPoll.Failed, KVPoll.Success)),
                             KVPoll.Failed)
            self.assertGreaterEqual(time.monotonic() - started, 1.0)
            with self.assertRaises(kvx.TimedOut):
                receiver.failure_exception()
            self.assertTrue(receiver.answered)  # the prefill cancelled before the pages went
            self.assertEqual(prefill.expect("SENT 12"), f"SENT 12 {KVPoll.Failed}")
        finally:
            mgr.close()
            prefill.stop()

    def test_prefill_killed_fails_the_receiver(self):
        prefill = PrefillProcess("tcp")
        buffers, mgr = manager("decode", DECODE_PAGES, "tcp")
        try:
            prefill.command("hold 9")
            receiver = KvxKVReceiver(mgr, prefill.address, 9)
            receiver.init(0)
            receiver.send_metadata(list(range(20)))
            os.kill(prefill.process.pid, signal.SIGKILL)
            started = time.monotonic()
            self.assertEqual(poll_until(receiver, (KVPoll.Failed,), timeout=15), KVPoll.Failed)
            self.assertLess(time.monotonic() - started, 10)
            with self.assertRaises(kvx.PeerFailed):
                receiver.failure_exception()
            # An unreachable bootstrap fails init, not the process.
            lost = KvxKVReceiver(mgr, prefill.address, 10)
            lost.init(0)
            self.assertEqual(lost.poll(), KVPoll.Failed)
        finally:
            mgr.close()
            prefill.stop()

    def across_tp(self, prefill_tp, decode_tp, page_size=1, data_path="shm"):
        """Requests between attention TP sizes that differ: each decode rank's heads from the
        prefill ranks holding them, every token's bytes compared by model head."""
        prefill = PrefillProcess(data_path, tp_size=prefill_tp, page_size=page_size)
        ranks = [manager("decode", DECODE_PAGES, data_path, tp_size=decode_tp, rank=rank,
                         page_size=page_size) for rank in range(decode_tp)]
        try:
            for room, (pages, chunk) in enumerate([(40, 16), (9, 9)]):
                self.request_across(prefill, ranks, room, pages, chunk, seed=room + 11)
        finally:
            for _, mgr in ranks:
                mgr.close()
            prefill.stop()
        self.assertEqual(prefill.process.returncode, 0)

    def test_prefill_tp_2_to_decode_tp_4_pages_of_2_tokens(self):
        self.across_tp(2, 4, page_size=2)

    def test_prefill_tp_4_to_decode_tp_2(self):
        self.across_tp(4, 2, data_path="tcp")

    def test_replicated_heads_at_the_decode(self):
        self.across_tp(2, 8)  # 4 KV heads: each head on 2 decode ranks

    def test_replicated_heads_at_the_prefill(self):
        self.across_tp(8, 2, data_path="socket")  # each head on 2 prefill ranks

    def test_state_buffers(self):
        """Mamba-like slots and SWA-like pages move with the last chunk, to the decode's own
        indices."""
        prefill = PrefillProcess("shm", state=True)
        buffers, mgr = manager("decode", DECODE_PAGES, "shm", state=True)
        try:
            for room, (pages, chunk) in enumerate([(20, 8), (5, 5)]):
                self.command_and_check(prefill, buffers, mgr, room, pages, chunk, seed=room + 2)
        finally:
            mgr.close()
            prefill.stop()
        self.assertEqual(prefill.process.returncode, 0)

    def test_mamba_state_between_tp_sizes(self):
        """A gated delta net's states between attention TP sizes: each decode rank's slot is
        assembled from the prefill ranks' shards of its conv state's q, k and v and of its
        temporal state's heads, every byte compared."""
        for prefill_tp, decode_tp in ((2, 1), (1, 2)):
            with self.subTest(prefill_tp=prefill_tp, decode_tp=decode_tp):
                prefill = PrefillProcess("shm", tp_size=prefill_tp, state="gdn")
                ranks = [manager("decode", DECODE_PAGES, "shm", tp_size=decode_tp, rank=rank,
                                 state="gdn") for rank in range(decode_tp)]
                try:
                    for room, (pages, chunk) in enumerate([(12, 5), (3, 3)]):
                        self.request_across(prefill, ranks, room, pages, chunk, seed=room + 7)
                finally:
                    for _, mgr in ranks:
                        mgr.close()
                    prefill.stop()
                self.assertEqual(prefill.process.returncode, 0)

    def test_undescribed_state_between_tp_sizes_is_refused(self):
        prefill = PrefillProcess("shm", tp_size=2, state=True)
        ranks = [manager("decode", DECODE_PAGES, "shm", rank=0, state=True)]
        buffers, mgr = ranks[0]
        try:
            receiver = KvxKVReceiver(mgr, prefill.address, 3)
            receiver.init(0)
            receiver.send_metadata([1, 2], aux_index=0, state_indices=[[1], [2, 3]])
            self.assertEqual(receiver.poll(), KVPoll.Failed)
            with self.assertRaisesRegex(kvx.InvalidArgument, r"state buffer 0 \(mamba\) moves "
                                        "only between equal attention TP sizes .* the prefill "
                                        "has 2, this decode 1"):
                receiver.failure_exception()
        finally:
            mgr.close()
            prefill.stop()


if __name__ == "__main__":
    unittest.main()
