# kvx-test-labels: python connector ucx
"""kvx's SGLang backend as SGLang sets it up (kvx.integrations.sglang_bootstrap, sglang.py),
in one process: one bootstrap server per prefill node that every prefill rank registers with
(SGLang's routes and fields, python/sglang/srt/disaggregation/common/conn.py @0094505), two
ranks of one node starting side by side, the decode asking for the prefill's layout and its
rank, a layout that differs refused naming both, malformed registrations refused with the
server still up; the decode's prefix length reaching the prefill's pop_decode_prefix_len;
SGLang's sender members (should_send_kv_chunk, get_transfer_metric, conclude_state); and a
write that fails while earlier chunks are in flight failing the decode's receiver at once,
with the prefill polled only until it says Failed, as SGLang polls it."""
import json
import os
import sys
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fake_sglang import manager  # noqa: E402
from kvx.integrations import sglang_bootstrap as bootstrap  # noqa: E402
from kvx.integrations.sglang import (KVPoll, KvxKVBootstrapServer, KvxKVReceiver,  # noqa: E402
                                     KvxKVSender)

import kvx  # noqa: E402


def until(poll, states, timeout=10):
    deadline = time.monotonic() + timeout
    state = poll()
    while state not in states and time.monotonic() < deadline:
        time.sleep(0.002)
        state = poll()
    return state


class SglangBootstrap(unittest.TestCase):
    def setUp(self):
        self.server = KvxKVBootstrapServer("127.0.0.1", 0)
        self.address = f"127.0.0.1:{self.server.port}"
        self.managers = []

    def tearDown(self):
        for mgr in self.managers:
            mgr.close()
        self.server.close()

    def prefill(self, pages=256, **options):
        buffers, mgr = manager("prefill", pages, "tcp", bootstrap_address=self.address,
                               **options)
        self.managers.append(mgr)
        return buffers, mgr

    def decode(self, pages=256, **options):
        buffers, mgr = manager("decode", pages, "tcp", **options)
        self.managers.append(mgr)
        return buffers, mgr

    def put(self, body):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        request = urllib.request.Request(f"http://{self.address}/route", data=data,
                                         method="PUT")
        try:
            with urllib.request.urlopen(request, timeout=5) as answer:
                return answer.status
        except urllib.error.HTTPError as error:
            return error.code

    def test_ranks_of_one_node_register_and_are_found(self):
        _, first = self.prefill()
        self.assertEqual(bootstrap.parallel_info(self.address)["attn_tp_size"], 1)
        self.assertEqual(bootstrap.rank_address(self.address, 0, 0), first.agent.listen_address)
        with self.assertRaises(kvx.NotFound):
            bootstrap.rank_address(self.address, 0, 1)
        _, decode = self.decode()
        self.assertTrue(decode.try_ensure_parallel_info(self.address))
        self.assertEqual(decode.prefill_info_table[self.address].page_size, 1)

    def test_two_ranks_start_side_by_side(self):
        """TP 2 on one node: both ranks' agents listen on ports of their own and register with
        the one server, which answers only once both have."""
        layout = {"attn_tp_size": 2, "attn_tp_rank": 1, "rank_ip": "127.0.0.1",
                  "rank_port": 4242, "page_size": 1, "kv_cache_dtype": "auto"}
        self.assertEqual(self.put({**layout, "attn_tp_rank": 0}), 200)
        self.assertIsNone(bootstrap.parallel_info(self.address))  # rank 1 missing: 503
        self.assertEqual(self.put(layout), 200)
        self.assertEqual(bootstrap.parallel_info(self.address)["attn_tp_size"], 2)
        self.assertEqual(bootstrap.rank_address(self.address, 0, 1), "127.0.0.1:4242")
        _, decode = self.decode()  # TP 1 against TP 2: rank 0 reads from both
        self.assertTrue(decode.try_ensure_parallel_info(self.address))
        _, odd = self.decode(tp_size=3)  # neither divides the other: refused, naming both
        with self.assertRaises(kvx.InvalidArgument) as caught:
            odd.try_ensure_parallel_info(self.address)
        self.assertIn("attention TP is 2, this decode's 3", str(caught.exception))
        _, other = self.decode(page_size=16)
        with self.assertRaisesRegex(kvx.InvalidArgument, "page_size 1, this decode 16"):
            other.try_ensure_parallel_info(self.address)

    def test_malformed_registrations_are_refused(self):
        good = {"attn_tp_size": 1, "attn_tp_rank": 0, "rank_ip": "127.0.0.1",
                "rank_port": 4000, "page_size": 1}
        for bad in (b"not json", b"[1, 2]", {**good, "attn_tp_rank": 3},
                    {**good, "rank_port": 70000}, {**good, "attn_tp_size": -1},
                    {**good, "rank_ip": 5}, b"x" * (65 * 1024)):
            self.assertEqual(self.put(bad), 400, bad[:40] if isinstance(bad, bytes) else bad)
        self.assertEqual(self.put(good), 200)
        self.assertEqual(self.put({**good, "page_size": 16}), 400)  # not this node's layout
        self.assertEqual(bootstrap.rank_address(self.address, 0, 0), "127.0.0.1:4000")

    def connected_pair(self, pages=8):
        prefill_buffers, prefill = self.prefill()
        decode_buffers, decode = self.decode()
        sender = KvxKVSender(mgr=prefill, bootstrap_addr=self.address, bootstrap_room=5,
                             dest_tp_ranks=[0], pp_rank=0)
        receiver = KvxKVReceiver(decode, self.address, 5)
        receiver.init(0)
        return prefill_buffers, decode_buffers, sender, receiver

    def test_prefix_and_sender_members(self):
        prefill_buffers, decode_buffers, sender, receiver = self.connected_pair()
        receiver.send_metadata(list(range(10, 14)), aux_index=None, decode_prefix_len=48)
        self.assertEqual(until(sender.poll, (KVPoll.WaitingForInput,)), KVPoll.WaitingForInput)
        self.assertEqual(sender.pop_decode_prefix_len(), 48)
        self.assertTrue(sender.should_send_kv_chunk(0, True))
        self.assertFalse(sender.should_send_kv_chunk(0, False))
        self.assertIsNone(sender.conclude_state)
        prefill_buffers.fill([3, 4, 5, 6], seed=2)
        sender.init(4)
        sender.send([3, 4, 5, 6])
        self.assertEqual(until(sender.poll, (KVPoll.Success, KVPoll.Failed)), KVPoll.Success)
        self.assertEqual(until(receiver.poll, (KVPoll.Success, KVPoll.Failed)), KVPoll.Success)
        self.assertEqual((sender.conclude_state, receiver.conclude_state),
                         (KVPoll.Success, KVPoll.Success))
        self.assertTrue(decode_buffers.matches([10, 11, 12, 13], seed=2))
        metric = sender.get_transfer_metric()
        self.assertEqual(metric.transfer_total_bytes, 4 * sum(prefill_buffers.args().kv_item_lens))
        self.assertIsNotNone(metric.transfer_latency_s)

    def test_a_failed_write_fails_the_decode_at_once(self):
        """The second chunk's pages lie beyond the decode's buffers: the prefill's poll says
        Failed (SGLang then polls it no more), and the decode hears it at once."""
        prefill_buffers, _, sender, receiver = self.connected_pair()
        receiver.send_metadata(list(range(200)) + [1000, 1001], aux_index=None)
        self.assertEqual(until(sender.poll, (KVPoll.WaitingForInput,)), KVPoll.WaitingForInput)
        sender.init(202)
        sender.send(list(range(200)))  # large enough to be in flight still at the next poll
        sender.send([200, 201])
        self.assertEqual(until(sender.poll, (KVPoll.Failed,)), KVPoll.Failed)
        started = time.monotonic()
        self.assertEqual(until(receiver.poll, (KVPoll.Failed, KVPoll.Success)), KVPoll.Failed)
        self.assertLess(time.monotonic() - started, 5)
        self.assertEqual(receiver.conclude_state, KVPoll.Failed)

    def test_malformed_metadata_fails_the_room_only(self):
        """A meta whose pages are out of range, or not runs at all: the sender fails with a
        message naming the peer; the manager serves the next room."""
        prefill_buffers, decode_buffers, sender, receiver = self.connected_pair()
        decode = receiver.mgr
        for room, runs in ((21, [[0, -1]]), (22, [[0, 1 << 30]]), (23, "pages")):
            bad = KvxKVSender(mgr=sender.mgr, bootstrap_addr=self.address,
                              bootstrap_room=room)
            decode.send_note(receiver.peer, "meta", room, {"peer": decode.agent.name,
                                                           "runs": runs})
            self.assertEqual(until(bad.poll, (KVPoll.Failed,)), KVPoll.Failed, runs)
            with self.assertRaisesRegex(kvx.InvalidArgument, "malformed metadata from"):
                bad.failure_exception()
        receiver.send_metadata([7, 8], aux_index=None)
        self.assertEqual(until(sender.poll, (KVPoll.WaitingForInput,)), KVPoll.WaitingForInput)
        prefill_buffers.fill([1, 2], seed=6)
        sender.init(2)
        sender.send([1, 2])
        self.assertEqual(until(receiver.poll, (KVPoll.Success, KVPoll.Failed)), KVPoll.Success)
        self.assertTrue(decode_buffers.matches([7, 8], seed=6))


if __name__ == "__main__":
    unittest.main()
