# kvx-test-labels: python ucx
"""kvx.KvAgent from Python: a prefill and a decode agent with pools of a small model shape,
over UCX shm, UCX tcp and the socket transport; requests pushed and pulled, whole and layer by
layer, every byte of every segment compared; a decode pool over torch tensors the test owns
(the bytes land in them); tensors shorter than the pool refused, and buffers held against
resizing while the agent uses them; a cancelled request; and bad input, each raising the exception of
its StatusCode while the agents keep working."""
import json
import threading
import time
import unittest

import numpy as np

import kvx

TINY = json.dumps({"name": "tiny", "layers": 4, "kvHeads": 2, "headDim": 16, "dtypeBytes": 2,
                   "tokensPerBlock": 4})


def pattern(agent, blocks, seed):
    size = len(agent.segments(blocks)) * agent.pool()["segment_bytes"]
    return ((np.arange(size, dtype=np.uint64) * 7 + seed) % 251).astype(np.uint8)


class KvAgentPair(unittest.TestCase):
    def make(self, data_path, decode_tensors=None, **decode_options):
        prefill = kvx.KvAgent("py-prefill", "prefill", model=TINY, blocks=64,
                              data_path=data_path)
        decode = kvx.KvAgent("py-decode", "decode", model=TINY, blocks=96, data_path=data_path,
                             tensors=decode_tensors, **decode_options)
        self.addCleanup(prefill.close)
        self.addCleanup(decode.close)
        self.assertEqual(prefill.connect(decode.listen_address), "py-decode")
        return prefill, decode

    def move(self, prefill, decode, request_id, tokens, seed, mode, layerwise=False):
        """One request, prefill to decode; returns the decode's arrival."""
        blocks = prefill.allocate_blocks(prefill.blocks_for(tokens))
        self.assertEqual(blocks.dtype, np.uint64)
        data = pattern(prefill, blocks, seed)
        prefill.write_segments(prefill.segments(blocks), data)
        prefill.submit(request_id, tokens, blocks, mode=mode, layerwise=layerwise)
        if layerwise:
            for layer in range(prefill.pool()["layers"]):
                prefill.layer_ready(request_id, layer)
                decode.wait_layer(request_id, layer, timeout=20)
        arrival = decode.next_arrival(timeout=20)
        self.assertEqual((arrival["id"], arrival["tokens"], arrival["peer"]),
                         (request_id, tokens, "py-prefill"))
        self.assertEqual(len(arrival["blocks"]), len(blocks))
        got = decode.read_segments(decode.segments(arrival["blocks"]))
        self.assertTrue(np.array_equal(got, data), f"request {request_id}")
        decode.consume(request_id)
        decode.release(request_id)
        status = prefill.wait(request_id, timeout=20)
        self.assertEqual((status["state"], status["error"], status["mode"]),
                         ("released", None, mode))
        self.assertEqual(status["bytes"], len(data))
        return arrival

    def exchange(self, data_path):
        prefill, decode = self.make(data_path)
        free = decode.usage()["free_blocks"]
        for i, (tokens, mode, layerwise) in enumerate(
                [(10, "push", False), (33, "pull", False), (16, "push", True),
                 (7, "pull", True)]):
            self.move(prefill, decode, f"r{i}", tokens, seed=i + 1, mode=mode,
                      layerwise=layerwise)
        self.assertEqual(decode.usage()["free_blocks"], free)
        self.assertEqual(prefill.peers()[0]["name"], "py-decode")

    def test_shm(self):
        self.exchange("shm")

    def test_tcp(self):
        self.exchange("tcp")

    def test_socket(self):
        self.exchange("socket")

    def test_a_pool_over_torch_tensors(self):
        try:
            import torch
        except ImportError:
            self.skipTest("python3-torch is not installed")
        probe = kvx.KvAgent("py-probe", "decode", model=TINY, blocks=96)
        pool = probe.pool()
        probe.close()
        tensors = [torch.zeros(pool["tensor_bytes"], dtype=torch.uint8)
                   for _ in range(pool["tensors"])]
        prefill, decode = self.make("shm", decode_tensors=tensors)
        self.assertEqual(decode.pool()["memory"], "host")
        arrival = self.move(prefill, decode, "t0", 12, seed=9, mode="push")
        # The bytes are in the test's tensors: nonzero where the blocks are.
        self.assertTrue(any(bool(t.any()) for t in tensors))
        self.assertEqual(len(arrival["blocks"]), 3)

    def test_close_wakes_threads_waiting_for_an_arrival_or_a_layer(self):
        agent = kvx.KvAgent("py-kv-waiter", "decode", model=TINY, blocks=8)
        outcome = {}

        def wait(name, call):
            started = time.monotonic()
            try:
                call()
                outcome[name] = ("returned", time.monotonic() - started)
            except kvx.Error as error:
                outcome[name] = (type(error).__name__, time.monotonic() - started)
        waiters = [threading.Thread(target=wait, args=("arrival",
                                                       lambda: agent.next_arrival(timeout=60))),
                   threading.Thread(target=wait, args=("layer",
                                                       lambda: agent.wait_layer("r", 0, 60)))]
        for waiter in waiters:
            waiter.start()
        time.sleep(0.2)
        agent.close()
        for waiter in waiters:
            waiter.join(timeout=20)
            self.assertFalse(waiter.is_alive(), "a wait went on after close()")
        for name in ("arrival", "layer"):
            self.assertEqual(outcome[name][0], "Cancelled", name)
            self.assertLess(outcome[name][1], 20, name)
        with self.assertRaises(kvx.FailedPrecondition):
            agent.next_arrival(timeout=1)

    def test_give_back_held_blocks_and_the_push_cap(self):
        decode = kvx.KvAgent("py-give-back", "decode", model=TINY, blocks=8,
                             max_push_blocks_per_peer=4)
        prefill = kvx.KvAgent("py-give-back-p", "prefill", model=TINY, blocks=8)
        try:
            self.assertEqual(decode.give_back_held_blocks(""), 0)  # nothing held
            self.assertEqual(decode.usage()["held_blocks"], 0)
            with self.assertRaises(kvx.FailedPrecondition):
                prefill.give_back_held_blocks("")
        finally:
            decode.close()
            prefill.close()

    def test_a_model_given_as_a_json_object(self):
        agent = kvx.KvAgent("py-dict-model", "decode", model=json.loads(TINY), blocks=8)
        self.assertEqual(agent.pool()["layers"], 4)
        agent.close()

    def test_tensors_shorter_than_the_pool_are_refused(self):
        """Tensors a peer would write past the end of (two of 16 bytes for a pool of 4 KiB
        each) are refused at construction, naming both sizes; the right ones are taken."""
        probe = kvx.KvAgent("py-probe-short", "decode", model=TINY, blocks=8)
        pool = probe.pool()
        probe.close()
        short = [np.zeros(16, dtype=np.uint8) for _ in range(pool["tensors"])]
        with self.assertRaisesRegex(kvx.InvalidArgument,
                                    f"pool tensor 0 is 16 bytes; the pool needs "
                                    f"{pool['tensor_bytes']} per tensor"):
            kvx.KvAgent("py-short", "decode", model=TINY, blocks=8, tensors=short)
        right = [bytearray(pool["tensor_bytes"]) for _ in range(pool["tensors"])]
        agent = kvx.KvAgent("py-right", "decode", model=TINY, blocks=8, tensors=right)
        with self.assertRaises(BufferError):  # held: its bytes cannot move under the pool
            right[0].extend(b"more")
        agent.close()
        right[0].extend(b"more")  # released with the agent

    def test_failed_layerwise_request_keeps_source_for_its_producer(self):
        prefill, decode = self.make("tcp")
        total = prefill.usage()["total_blocks"]
        kept = prefill.allocate_blocks(2)
        prefill.submit("kept", 8, kept, mode="push", layerwise=True,
                       keep_source_for_producer=True)
        plain = prefill.allocate_blocks(2)
        prefill.submit("plain", 8, plain, mode="push", layerwise=True)
        for request_id in ("kept", "plain"):
            prefill.layer_ready(request_id, 0)
            decode.wait_layer(request_id, 0, timeout=20)
        decode.close()  # both fail: their decode agent is gone
        for request_id in ("kept", "plain"):
            with self.assertRaises(kvx.Error):
                prefill.wait(request_id, timeout=20)
        # "plain" gave its blocks back once its moves drained; "kept" waits for its producer,
        # which may still be writing layer 1 into them.
        self.assertEqual(prefill.usage()["free_blocks"], total - 2)
        with self.assertRaises(kvx.FailedPrecondition):
            prefill.layer_ready("kept", 1)
        self.assertEqual(prefill.usage()["free_blocks"], total)

    def test_cancel_and_bad_input(self):
        prefill, decode = self.make("tcp")
        blocks = prefill.allocate_blocks(2)
        prefill.submit("held", 8, blocks, mode="pull", layerwise=True)
        prefill.cancel("held")
        with self.assertRaises(kvx.Cancelled):
            prefill.wait("held", timeout=20)
        self.assertEqual(prefill.status("held")["state"], "failed")
        self.assertIn("cancelled", prefill.status("held")["error"])
        with self.assertRaises(kvx.NotFound):
            prefill.status("never")
        with self.assertRaises(kvx.InvalidArgument):
            prefill.submit("bad", 400, prefill.allocate_blocks(1))  # blocks do not hold it
        with self.assertRaises(kvx.InvalidArgument):
            prefill.write_segments(np.array([[999, 0, 0]], dtype=np.uint64),
                                   np.zeros(prefill.pool()["segment_bytes"], dtype=np.uint8))
        with self.assertRaises(ValueError):
            prefill.write_segments(prefill.segments([0]), np.zeros(3, dtype=np.uint8))
        with self.assertRaises(TypeError):
            prefill.free_blocks([object()])
        with self.assertRaises(kvx.InvalidArgument):
            kvx.KvAgent("py-bad", "sideways", model=TINY, blocks=8)
        with self.assertRaises(TypeError):
            kvx.KvAgent("py-bad", "decode", model=TINY, blocks=8, colour="blue")
        with self.assertRaises(kvx.TimedOut):
            decode.next_arrival(timeout=0.05)
        # Still working.
        self.move(prefill, decode, "after", 9, seed=4, mode="push")
        decode.close()
        with self.assertRaises(kvx.FailedPrecondition):
            decode.usage()


if __name__ == "__main__":
    unittest.main()
