# kvx-test-labels: python connector ucx multiprocess
"""kvx's vLLM connector in push mode (kvx.integrations.vllm_push), driven in the order vLLM
calls it across a prefill instance in another process (vllm_prefill_engine.py) and a decode
instance here, every byte of every pushed block compared. The decode gets each request first
and tells the prefill workers where its blocks are; the prefill computes the request layer by
layer, each layer filled just before save_kv_layer, and writes it then. Over shm, tcp and the
socket transport: the decode's blocks known before the prefill computes (written layer by
layer) and after (written at once); a prefix hit (only the rest is written); a whole prefix
hit (nothing written, the prefill's blocks released); TP 2 to 4 and 4 to 2; caches of another
shape (refused by the prefill, the blocks failed); a decode that never comes (the lease frees
the prefill's blocks); a prefill that computes the prompt in chunks (chunked prefill: the push goes with the last);
a prefill that never writes (the decode cancels, and hands its blocks
back failed only once the prefill answered); a prefill stopped during the push over shared
memory (the blocks held until its process ends); a prefill killed during the push. Prints
kvx-test-skipped without torch."""
import os
import signal
import sys
import time
import unittest

import require_torch  # noqa: F401 (skips the test without torch)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fake_vllm import BLOCK_SIZE, Request, RequestStatus, blocks_for  # noqa: E402
from engine_process import wait_stopped  # noqa: E402
from vllm_harness import (PrefillProcess, PushRequests, decode_engine,  # noqa: E402
                          drop_before_allocation, push_params, run_until, wait_for_room)


class VllmPush(PushRequests, unittest.TestCase):
    def exchange(self, data_path, prefill_tp=1, decode_tp=1):
        prefill = PrefillProcess(data_path, tp_size=prefill_tp, mode="push")
        decode = decode_engine("push-decode", data_path, tp_size=decode_tp)
        try:
            cases = ((40, True), (5 * BLOCK_SIZE, False), (7, True), (9 * BLOCK_SIZE + 1, False))
            for i, (tokens, decode_first) in enumerate(cases):
                blocks, failed = self.push_request(decode, prefill, f"r{i}", tokens, i + 1,
                                                   decode_first=decode_first)
                self.assertEqual(failed, set())
                self.assertEqual(len(blocks), blocks_for(tokens))
                self.assertTrue(decode.matches(blocks, seed=i + 1), f"request r{i}")
                prefill.expect(f"FREED p-r{i}")
            blocks, failed = self.push_request(decode, prefill, "hit", 6 * BLOCK_SIZE, seed=9,
                                               computed_blocks=2)
            self.assertEqual((failed, len(blocks)), (set(), 4))
            self.assertTrue(decode.matches(blocks, seed=9, first_position=2))
            prefill.expect("FREED p-hit")
            blocks, failed = self.push_request(decode, prefill, "all", 3 * BLOCK_SIZE, seed=4,
                                               computed_blocks=3, decode_first=False)
            self.assertEqual((blocks, failed), ([], set()))
            prefill.expect("FREED p-all")
        finally:
            decode.close()
            prefill.stop()
        self.assertEqual(prefill.process.returncode, 0)

    def test_prefill_first(self):
        """Upstream's push flow: the prefill runs first and its request_finished hands the
        decode its request id (with vLLM's random suffix) and workers; the decode's dest then
        gets every layer in one write."""
        prefill = PrefillProcess("shm", mode="push")
        decode = decode_engine("push-after", "shm")
        try:
            params = prefill.push("first", 3 * BLOCK_SIZE, seed=8)
            self.assertTrue(params["remote_request_id"].startswith("first-"))
            self.assertEqual(len(params["remote_request_id"]), len("first-") + 8)
            request = Request("after", 3 * BLOCK_SIZE, params)
            blocks = self.allocate(decode, request, 3 * BLOCK_SIZE)
            self.assertEqual(run_until(decode, "after"), set())
            self.assertTrue(decode.matches(blocks, seed=8))
            prefill.expect("FREED first")
        finally:
            decode.close()
            prefill.stop()

    def test_chunked_prefill(self):
        """The prompt computed 40 tokens a step (blocks allocated as the chunks need them):
        the push goes with the last chunk, every block of every chunk, for a decode whose
        dest came before the first chunk and for one that comes after the last."""
        prefill = PrefillProcess("shm", mode="push")
        decode = decode_engine("push-chunked", "shm")
        try:
            tokens = 5 * BLOCK_SIZE + 9
            request = Request("early", tokens, push_params(prefill, "p-early"))
            blocks = self.allocate(decode, request, tokens)
            for _ in range(5):
                decode.step()  # the dest goes out before the prefill schedules the request
            prefill.chunked("p-early", tokens, seed=6, chunk=40)
            self.assertEqual(run_until(decode, "early"), set())
            self.assertTrue(decode.matches(blocks, seed=6))
            prefill.expect("FREED p-early")
            params = prefill.chunked("after", tokens, seed=7, chunk=40)
            request = Request("late", tokens, params)
            blocks = self.allocate(decode, request, tokens)
            self.assertEqual(run_until(decode, "late"), set())
            self.assertTrue(decode.matches(blocks, seed=7))
            prefill.expect("FREED after")
        finally:
            decode.close()
            prefill.stop()
        self.assertEqual(prefill.process.returncode, 0)

    def test_layers_written_once_their_compute_ran(self):
        """The prefill's forward runs ahead of its compute stream (FakeStream): each layer is
        written once its CUDA event says the compute passed it, never by waiting in the
        forward, and every byte arrives."""
        prefill = PrefillProcess("shm", mode="push")
        decode = decode_engine("push-async", "shm")
        try:
            request = Request("async", 3 * BLOCK_SIZE, push_params(prefill, "p-async"))
            blocks = self.allocate(decode, request, 3 * BLOCK_SIZE)
            for _ in range(5):
                decode.step()  # the dest goes out before the prefill computes
            time.sleep(0.2)
            prefill.push("p-async", 3 * BLOCK_SIZE, seed=7, asynchronous=True)
            self.assertEqual(run_until(decode, "async"), set())
            self.assertTrue(decode.matches(blocks, seed=7))
            prefill.expect("FREED p-async")
        finally:
            decode.close()
            prefill.stop()

    def test_a_waiting_decode_keeps_the_lease(self):
        """Prefill first, then a decode that waits three leases for blocks: its heartbeats
        keep the prefill's blocks, and its destination then gets them."""
        prefill = PrefillProcess("tcp", lease=1.0, mode="push")
        decode = decode_engine("push-wait", "tcp")
        try:
            params = prefill.push("waited", 2 * BLOCK_SIZE, seed=5)
            request = Request("wait", 2 * BLOCK_SIZE, params)
            wait_for_room(decode, request, 3.0)
            with self.assertRaises(AssertionError):
                prefill.expect("FREED waited", timeout=0.2)
            blocks = self.allocate(decode, request, 2 * BLOCK_SIZE)
            self.assertEqual(run_until(decode, "wait"), set())
            self.assertTrue(decode.matches(blocks, seed=5))
            prefill.expect("FREED waited")
        finally:
            decode.close()
            prefill.stop()

    def test_an_aborted_prefill(self):
        """The prefill aborts a request a decode is waiting for: vLLM frees its blocks at
        once (the connector keeps none), and the decode hears the push failed, long before
        its push timeout."""
        prefill = PrefillProcess("tcp", mode="push")
        decode = decode_engine("push-abort", "tcp")
        try:
            request = Request("gone", 4 * BLOCK_SIZE, push_params(prefill, "p-gone"))
            blocks = self.allocate(decode, request, 4 * BLOCK_SIZE)
            for _ in range(5):
                decode.step()  # the dest goes out
            started = time.monotonic()
            self.assertFalse(prefill.abort("p-gone", 4 * BLOCK_SIZE, seed=2))
            self.assertEqual(run_until(decode, "gone"), set(blocks))
            self.assertLess(time.monotonic() - started, 10)
        finally:
            decode.close()
            prefill.stop()

    def test_a_decode_aborted_before_allocation(self):
        """The decode drops a request before its blocks were allocated: the prefill is told at
        once and frees its blocks (not when its lease ends)."""
        prefill = PrefillProcess("tcp", mode="push")
        decode = decode_engine("push-dropped", "tcp")
        try:
            params = prefill.push("kept", 2 * BLOCK_SIZE, seed=4)
            request = Request("dropped", 2 * BLOCK_SIZE, params, RequestStatus.FINISHED_ABORTED)
            started = drop_before_allocation(decode, request)
            prefill.expect("FREED kept", timeout=10)
            self.assertLess(time.monotonic() - started, 10)
        finally:
            decode.close()
            prefill.stop()

    def test_layouts(self):
        for layout in ("kv-outer", "BLNHC", "mla"):
            with self.subTest(layout=layout):
                self.short_push(layout)

    def test_replicated_heads(self):
        """2 KV heads at TP 4 (each on two ranks), from a prefill at TP 1 and to TP 2."""
        self.short_push("LBHNC", prefill_tp=1, decode_tp=4, total_heads=2)
        self.short_push("LBNHC", prefill_tp=4, decode_tp=2, total_heads=2)

    def test_shm(self):
        self.exchange("shm")

    def test_tcp(self):
        self.exchange("tcp")

    def test_socket(self):
        self.exchange("socket")

    def test_tensor_parallel_2_to_4(self):
        self.exchange("shm", prefill_tp=2, decode_tp=4)

    def test_tensor_parallel_4_to_2(self):
        self.exchange("tcp", prefill_tp=4, decode_tp=2)

    def test_caches_of_another_shape(self):
        prefill = PrefillProcess("tcp", lease=1.0, mode="push")
        decode = decode_engine("push-narrow", "tcp", head_dim=16)
        try:
            blocks, failed = self.push_request(decode, prefill, "narrow", 3 * BLOCK_SIZE, 7)
            self.assertEqual(failed, set(blocks))
            self.assertTrue(all(not t.any() for t in decode.kv_caches[0].values()))
            prefill.expect("FREED p-narrow", timeout=10)
        finally:
            decode.close()
            prefill.stop()

    def test_a_decode_that_never_comes(self):
        prefill = PrefillProcess("tcp", lease=0.5, mode="push")
        try:
            started = time.monotonic()
            prefill.push("orphan", 3 * BLOCK_SIZE, seed=2)
            prefill.expect("FREED orphan", timeout=10)
            self.assertGreaterEqual(time.monotonic() - started, 0.5)
        finally:
            prefill.stop()

    def test_a_prefill_that_never_writes(self):
        """The prefill never gets the request, so vLLM never steps it (it has nothing to do):
        the decode's push times out, its cancel goes unanswered, it drops the link and hands
        its blocks back failed (over tcp the decode places every byte, and a removed peer's
        writes are refused); a late push of that request writes nothing."""
        prefill = PrefillProcess("tcp", mode="push")
        decode = decode_engine("push-late", "tcp", push_timeout=1.0, connect_timeout=1.0)
        try:
            request = Request("late", 2 * BLOCK_SIZE, push_params(prefill, "p-late"))
            blocks = self.allocate(decode, request, 2 * BLOCK_SIZE)
            started = time.monotonic()
            self.assertEqual(run_until(decode, "late"), set(blocks))
            self.assertGreaterEqual(time.monotonic() - started, 2.0)
            self.assertNotIn("vllm-prefill-0-tp0", decode.workers[0]._agent.peers())
            prefill.push("p-late", 2 * BLOCK_SIZE, seed=3)
            for _ in range(50):
                decode.step()
                time.sleep(0.002)
            self.assertTrue(decode.untouched())
        finally:
            decode.close()
            prefill.stop()

    def test_a_prefill_stopped_during_the_push_over_shm(self):
        """Over shared memory the prefill's process copies into the decode's cache itself: one
        stopped mid-push could finish its copy after the decode dropped its link, so the
        decode hands the blocks back (failed) only once that process has ended."""
        prefill = PrefillProcess("shm", mode="push")
        decode = decode_engine("push-stop", "shm", push_timeout=1.0, connect_timeout=2.0)
        try:
            blocks, failed = self.push_request(decode, prefill, "warm", BLOCK_SIZE, seed=6)
            self.assertEqual(failed, set())  # linked: the next dest goes out at once
            request = Request("held", 4 * BLOCK_SIZE, push_params(prefill, "p-held"))
            blocks = self.allocate(decode, request, 4 * BLOCK_SIZE)
            for _ in range(5):
                decode.step()  # the dest goes out
            os.kill(prefill.process.pid, signal.SIGSTOP)
            wait_stopped(prefill.process.pid)
            # The push times out (1 s), the cancel gets no answer (2 s), the link is dropped:
            # the blocks stay with the request.
            until = time.monotonic() + 5.0
            while time.monotonic() < until:
                _, recving, failed = decode.step()
                self.assertNotIn("held", recving)
                self.assertEqual(failed, set())
                time.sleep(0.005)
            self.assertNotIn("vllm-prefill-0-tp0", decode.workers[0]._agent.peers())
            os.kill(prefill.process.pid, signal.SIGKILL)
            prefill.process.wait(timeout=10)
            self.assertEqual(run_until(decode, "held", timeout=10), set(blocks))
        finally:
            decode.close()
            prefill.stop()

    def test_a_prefill_killed_during_the_push(self):
        prefill = PrefillProcess("tcp", mode="push")
        decode = decode_engine("push-kill", "tcp")
        try:
            blocks, failed = self.push_request(decode, prefill, "warm", BLOCK_SIZE, seed=6)
            self.assertEqual(failed, set())
            request = Request("mid", 12 * BLOCK_SIZE, push_params(prefill, "p-mid"))
            blocks = self.allocate(decode, request, 12 * BLOCK_SIZE)
            for _ in range(5):
                decode.step()
            os.kill(prefill.process.pid, signal.SIGKILL)
            prefill.process.wait(timeout=10)
            started = time.monotonic()
            self.assertEqual(run_until(decode, "mid"), set(blocks))
            self.assertLess(time.monotonic() - started, 15)
        finally:
            decode.close()
            prefill.stop()


if __name__ == "__main__":
    unittest.main()
