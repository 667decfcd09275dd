# kvx-test-labels: python connector ucx multiprocess
"""kvx's vLLM connector (kvx.integrations.vllm) driven in the order vLLM calls it, across a
prefill instance in another process (vllm_prefill_engine.py) and a decode instance here, with
torch KV caches allocated as vLLM allocates them (vllm_caches.py; the two instances with
different numbers of blocks), every byte of every moved block compared: the layouts vLLM
has handed out; replicated KV heads (2 heads at TP 4);
requests of several sizes over shm, tcp and the socket transport; tensor parallelism that
differs (prefill TP 2 and decode TP 4, and 4 to 2: each decode worker reads its heads from the
prefill workers holding them); a prefix hit (only the rest is read); a whole prefix hit
(nothing read, the prefill blocks released); caches of another shape (refused, the blocks
failed); a decode that never comes (the lease frees the blocks); and a prefill killed
before the read and during it (the decode reports the blocks as failed so that vLLM
recomputes them, and the request still finishes receiving); a prefill that never answers
the connect does not stall the decode's engine steps. Prints kvx-test-skipped without torch."""
import os
import signal
import sys
import time
import unittest

import require_torch  # noqa: F401 (skips the test without torch)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fake_vllm import (BLOCK_SIZE, Blocks, Engine, Request, RequestStatus,  # noqa: E402
                       blocks_for)
from engine_process import wait_stopped  # noqa: E402
from vllm_harness import (DECODE_BLOCKS, PrefillProcess, PullRequests,  # noqa: E402
                          drop_before_allocation, run_until, wait_for_room)


class VllmConnector(PullRequests, unittest.TestCase):
    def exchange(self, data_path, prefill_tp=1, decode_tp=1):
        prefill = PrefillProcess(data_path, tp_size=prefill_tp)
        decode = Engine("kv_consumer", "decode-0", DECODE_BLOCKS, tp_size=decode_tp,
                        data_path=data_path)
        try:
            for i, tokens in enumerate((40, 5 * BLOCK_SIZE, 7, 9 * BLOCK_SIZE + 1)):
                blocks, failed = self.decode_request(decode, prefill, f"r{i}", tokens, seed=i + 1)
                self.assertEqual(failed, set())
                self.assertEqual(len(blocks), blocks_for(tokens))
                self.assertTrue(decode.matches(blocks, seed=i + 1), f"request r{i}")
                prefill.expect(f"FREED p-r{i}")
            # A prefix hit: the first 2 blocks were computed here; only the rest is read.
            blocks, failed = self.decode_request(decode, prefill, "hit", 6 * BLOCK_SIZE, seed=9,
                                                 computed_blocks=2)
            self.assertEqual((failed, len(blocks)), (set(), 4))
            self.assertTrue(decode.matches(blocks, seed=9, first_position=2))
            prefill.expect("FREED p-hit")
            # A whole prefix hit: nothing to read; the prefill's blocks are released.
            blocks, failed = self.decode_request(decode, prefill, "all", 3 * BLOCK_SIZE, seed=4,
                                                 computed_blocks=3)
            self.assertEqual((blocks, failed), ([], set()))
            prefill.expect("FREED p-all")
        finally:
            decode.close()
            prefill.stop()
        self.assertEqual(prefill.process.returncode, 0)

    def test_aborts(self):
        """A prefill request aborted hands nothing on and keeps no block; a decode request
        dropped before its blocks were allocated frees the prefill's blocks at once, not when
        their lease ends."""
        prefill = PrefillProcess("tcp")
        decode = Engine("kv_consumer", "decode-abort", DECODE_BLOCKS, data_path="tcp")
        try:
            self.assertFalse(prefill.abort("p-aborted", 2 * BLOCK_SIZE, seed=1))
            params = prefill.prefill("p-dropped", 3 * BLOCK_SIZE, seed=2)
            request = Request("dropped", 3 * BLOCK_SIZE, params, RequestStatus.FINISHED_ABORTED)
            started = drop_before_allocation(decode, request)
            prefill.expect("FREED p-dropped", timeout=10)
            self.assertLess(time.monotonic() - started, 10)
        finally:
            decode.close()
            prefill.stop()

    def test_a_waiting_decode_keeps_the_lease(self):
        """A decode request that waits for blocks (not yet allocated) for three times the
        prefill's lease: its heartbeats keep the prefill's blocks, and the read then moves
        them."""
        prefill = PrefillProcess("tcp", lease=1.0)
        decode = Engine("kv_consumer", "decode-wait", DECODE_BLOCKS, data_path="tcp")
        try:
            params = prefill.prefill("p-wait", 3 * BLOCK_SIZE, seed=6)
            request = Request("wait", 3 * BLOCK_SIZE, params)
            count, _ = decode.scheduler.get_num_new_matched_tokens(request, 0)
            wait_for_room(decode, request, 3.0)
            with self.assertRaises(AssertionError):
                prefill.expect("FREED p-wait", timeout=0.2)
            blocks = decode.allocate(blocks_for(count))
            decode.scheduler.update_state_after_alloc(request, Blocks(blocks), count)
            self.assertEqual(run_until(decode, "wait"), set())
            self.assertTrue(decode.matches(blocks, seed=6))
            prefill.expect("FREED p-wait")
        finally:
            decode.close()
            prefill.stop()

    def test_layouts(self):
        """Layouts vLLM hands out (vllm_caches.py; the others are paired byte for byte in
        vllm_layout_test.py, and LBHNC is every other test's), 12 layers named as vLLM names
        them, kernel blocks half the scheduler's."""
        for layout in ("kv-outer", "blocks-kv", "packed", "mla", "LBNHC", "BLHNC"):
            with self.subTest(layout=layout):
                self.short_pull(layout)

    def test_replicated_heads(self):
        """2 KV heads: decode TP 4 holds each on two ranks (from a prefill at TP 1), and a
        prefill at TP 4 whose replicas are read once, the others told to free their blocks."""
        self.short_pull("LBNHC", prefill_tp=1, decode_tp=4, total_heads=2)
        self.short_pull("LBHNC", prefill_tp=4, decode_tp=2, total_heads=2)

    def test_shm(self):
        self.exchange("shm")

    def test_tcp(self):
        self.exchange("tcp")

    def test_socket(self):
        self.exchange("socket")

    def test_tensor_parallel_2_to_4(self):
        """Each decode worker reads its one head from the prefill worker holding it (two
        decode workers per prefill worker, a head range a token)."""
        self.exchange("shm", prefill_tp=2, decode_tp=4)

    def test_tensor_parallel_4_to_2(self):
        """Each decode worker reads its two heads from two prefill workers."""
        self.exchange("tcp", prefill_tp=4, decode_tp=2)

    def test_caches_of_another_shape(self):
        """A decode whose heads are half as wide: the read is refused, nothing moves, the
        blocks are reported failed, and the prefill's blocks go when their lease ends."""
        prefill = PrefillProcess("tcp", lease=1.0)
        decode = Engine("kv_consumer", "decode-narrow", DECODE_BLOCKS, data_path="tcp",
                        head_dim=16)
        try:
            params = prefill.prefill("p-narrow", 3 * BLOCK_SIZE, seed=7)
            request = Request("narrow", 3 * BLOCK_SIZE, params)
            count, _ = decode.scheduler.get_num_new_matched_tokens(request, 0)
            blocks = decode.allocate(blocks_for(count))
            decode.scheduler.update_state_after_alloc(request, Blocks(blocks), count)
            self.assertEqual(run_until(decode, "narrow"), set(blocks))
            self.assertTrue(all(not t.any() for t in decode.kv_caches[0].values()))
            prefill.expect("FREED p-narrow", timeout=10)
        finally:
            decode.close()
            prefill.stop()

    def test_a_decode_that_never_comes(self):
        prefill = PrefillProcess("tcp", lease=0.5)
        try:
            started = time.monotonic()
            prefill.prefill("orphan", 3 * BLOCK_SIZE, seed=2)
            prefill.expect("FREED orphan", timeout=10)
            self.assertGreaterEqual(time.monotonic() - started, 0.5)
        finally:
            prefill.stop()

    def test_a_prefill_killed_before_the_read(self):
        prefill = PrefillProcess("tcp")
        decode = Engine("kv_consumer", "decode-kill", DECODE_BLOCKS, data_path="tcp")
        try:
            params = prefill.prefill("p-lost", 4 * BLOCK_SIZE, seed=3)
            os.kill(prefill.process.pid, signal.SIGKILL)
            prefill.process.wait(timeout=10)
            request = Request("lost", 4 * BLOCK_SIZE, params)
            count, _ = decode.scheduler.get_num_new_matched_tokens(request, 0)
            blocks = decode.allocate(blocks_for(count))
            decode.scheduler.update_state_after_alloc(request, Blocks(blocks), count)
            started = time.monotonic()
            failed = run_until(decode, "lost")
            self.assertEqual(failed, set(blocks))
            self.assertLess(time.monotonic() - started, 15)
            self.assertEqual((decode.stats.data["failures"], decode.stats.data["bytes"]),
                             (1, 0))
        finally:
            decode.close()
            prefill.stop()

    def test_an_unanswering_prefill_does_not_stall_the_steps(self):
        prefill = PrefillProcess("tcp")
        decode = Engine("kv_consumer", "decode-stall", DECODE_BLOCKS, data_path="tcp",
                        connect_timeout=1.0)
        try:
            params = prefill.prefill("p-stall", 2 * BLOCK_SIZE, seed=8)
            os.kill(prefill.process.pid, signal.SIGSTOP)  # it accepts, but never answers
            wait_stopped(prefill.process.pid)
            request = Request("stall", 2 * BLOCK_SIZE, params)
            count, _ = decode.scheduler.get_num_new_matched_tokens(request, 0)
            blocks = decode.allocate(blocks_for(count))
            decode.scheduler.update_state_after_alloc(request, Blocks(blocks), count)
            started = time.monotonic()
            failed, slowest = set(), 0.0
            while time.monotonic() - started < 10:
                step = time.monotonic()
                _, recving, errors = decode.step()
                slowest = max(slowest, time.monotonic() - step)
                failed |= errors
                if "stall" in recving:
                    break
                time.sleep(0.005)
            self.assertEqual(failed, set(blocks))  # the connect's timeout failed the read
            self.assertLess(slowest, 0.5)
        finally:
            os.kill(prefill.process.pid, signal.SIGKILL)
            decode.close()
            prefill.stop()

    def test_a_prefill_killed_during_the_read(self):
        prefill = PrefillProcess("tcp")
        decode = Engine("kv_consumer", "decode-mid", DECODE_BLOCKS, data_path="tcp")
        try:
            # A first request connects the two (a connect to a stopped prefill would fail the
            # read at once, not leave it in flight).
            warm, failed = self.decode_request(decode, prefill, "warm", 2 * BLOCK_SIZE, seed=6)
            self.assertEqual(failed, set())
            self.assertTrue(decode.matches(warm, seed=6))
            params = prefill.prefill("p-mid", 12 * BLOCK_SIZE, seed=5)
            # Stopped, the prefill worker cannot answer the read (UCX's gets over tcp need
            # the target): the read is in flight when it is killed.
            os.kill(prefill.process.pid, signal.SIGSTOP)
            wait_stopped(prefill.process.pid)
            request = Request("mid", 12 * BLOCK_SIZE, params)
            count, _ = decode.scheduler.get_num_new_matched_tokens(request, 0)
            blocks = decode.allocate(blocks_for(count))
            decode.scheduler.update_state_after_alloc(request, Blocks(blocks), count)
            # It cannot succeed while the prefill is stopped; on a slow machine the decode may
            # declare it dead (peer timeout) before the kill, which fails the read the same way.
            failed, done = set(), False
            for _ in range(20):
                _, recving, errors = decode.step()
                failed |= errors
                done = done or "mid" in recving
                time.sleep(0.005)
            os.kill(prefill.process.pid, signal.SIGKILL)
            prefill.process.wait(timeout=10)
            started = time.monotonic()
            if not done:
                failed |= run_until(decode, "mid")
            self.assertEqual(failed, set(blocks))
            self.assertLess(time.monotonic() - started, 15)
        finally:
            decode.close()
            prefill.stop()


if __name__ == "__main__":
    unittest.main()
