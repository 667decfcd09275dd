# kvx-test-labels: python ucx multiprocess
"""kvx.Agent from Python against a decode agent in another Python process (decode_child.py),
over UCX shared memory, UCX tcp and kvx's socket transport: pushes and pulls of numpy arrays
through prepared lists and index arrays, every byte compared; a notification after the data;
cancel; the peer killed with SIGKILL during transfers; and bad input, each raising the
exception of its StatusCode while the agent keeps working. And, between two agents of this
process, what a peer says of itself in its handshake (application_info)."""
import os
import signal
import subprocess
import sys
import threading
import time
import unittest

import numpy as np

import kvx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from decode_child import pattern  # noqa: E402
from line_reader import LineReader  # noqa: E402

BLOCK = 64 * 1024
BLOCKS = 32
NBYTES = BLOCK * BLOCKS


class DecodeChild:
    def __init__(self, data_path, nbytes=NBYTES, memory="host"):
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "decode_child.py"), data_path, str(nbytes),
             memory],
            stdout=subprocess.PIPE, text=True)
        self._reader = LineReader(self.process.stdout.fileno())
        line = self._line(30)
        if not line.startswith("LISTENING "):
            self.stop()
            raise AssertionError(f"the decode child said {line!r}")
        self.address = line.split()[1]

    def _line(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self._reader.line(0.1)
            if line is not None:
                return line
            if self._reader.ended:
                self.process.wait(timeout=10)
                return f"(exited {self.process.returncode})"
        return "(no answer)"

    def expect(self, prefix, timeout=30):
        line = self._line(timeout)
        if not line.startswith(prefix):
            raise AssertionError(f"expected {prefix!r} from the decode child, got {line!r}")
        return line

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        self.process.stdout.close()


def ranges(region, blocks=BLOCKS, block_bytes=BLOCK):
    """One (region, offset, length) row per block of `block_bytes`, in order."""
    table = np.zeros((blocks, 3), dtype=np.uint64)
    table[:, 0] = region
    table[:, 1] = np.arange(blocks, dtype=np.uint64) * block_bytes
    table[:, 2] = block_bytes
    return table


class AgentAgainstAnotherProcess(unittest.TestCase):
    def run_pair(self, data_path):
        child = DecodeChild(data_path)
        try:
            with kvx.Agent("py-prefill", data_path=data_path, peer_timeout=1.0,
                           heartbeat_interval=0.2) as agent:
                source = np.zeros(NBYTES, dtype=np.uint8)
                local = agent.register_memory(source, name="src")
                peer = agent.connect(child.address, timeout=10)
                self.assertEqual(peer, "py-decode")
                remote = agent.peer_regions(peer)["kv"]["id"]
                local_list = agent.prepare_local_list(ranges(local))
                remote_list = agent.prepare_remote_list(peer, ranges(remote))
                order = np.arange(BLOCKS, dtype=np.uint32)

                # Push, blocks in order, then a notification the child verifies after.
                source[:] = pattern(1, NBYTES)
                agent.transfer(kvx.WRITE, local_list, order, remote_list, order,
                               notification="check 1")
                child.expect("VERIFIED 1 ok")

                # Pull the child's pattern back into a zeroed array, blocks reversed.
                agent.send_notification(peer, "fill 2")
                child.expect("FILLED 2")
                source[:] = 0
                agent.transfer(kvx.READ, local_list, order[::-1].copy(), remote_list, order)
                expected = pattern(2, NBYTES).reshape(BLOCKS, BLOCK)[::-1].reshape(-1)
                self.assertTrue(np.array_equal(source, expected))

                # Cancel: a transfer cancelled at once either finished first or failed
                # Cancelled; the agent goes on.
                transfer = agent.make_transfer(kvx.WRITE, local_list, order, remote_list, order)
                agent.post(transfer)
                agent.cancel(transfer)
                state, why = agent.poll(transfer)
                self.assertIn(state, ("done", "failed"))
                if state == "failed":
                    self.assertTrue(why.startswith("CANCELLED"), why)
                    with self.assertRaises(kvx.Cancelled):
                        agent.wait(transfer, timeout=5)
                agent.release(transfer)
                source[:] = pattern(3, NBYTES)
                agent.transfer(kvx.WRITE, local_list, order, remote_list, order,
                               notification="check 3")
                child.expect("VERIFIED 3 ok")

                # Bad input: each its exception, nothing sent.
                with self.assertRaises(TypeError):
                    agent.make_transfer(kvx.WRITE, local_list, [0], remote_list, order[:1])
                with self.assertRaises(TypeError):  # int64, not uint32
                    agent.make_transfer(kvx.WRITE, local_list, np.zeros(1, dtype=np.int64),
                                        remote_list, order[:1])
                with self.assertRaises(kvx.InvalidArgument) as raised:
                    agent.make_transfer(kvx.WRITE, local_list, np.array([BLOCKS], np.uint32),
                                        remote_list, order[:1])
                self.assertIn("outside the lists", str(raised.exception))
                self.assertIsInstance(raised.exception, ValueError)
                with self.assertRaises(ValueError):
                    agent.make_transfer(kvx.WRITE, local_list, order[::2], remote_list,
                                        order[:BLOCKS // 2])
                with self.assertRaises(kvx.NotFound):
                    agent.wait(123456, timeout=1)
                with self.assertRaises(kvx.NotFound):
                    agent.prepare_remote_list("nobody", ranges(remote))
                with self.assertRaises(kvx.InvalidArgument):
                    agent.make_transfer("sideways", local_list, order, remote_list, order)
                with self.assertRaises(ValueError):  # not contiguous
                    agent.register_memory(np.zeros((4, 4), dtype=np.uint8)[:, ::2])
                with self.assertRaises(kvx.TimedOut):
                    agent.wait_notification(timeout=0.05)
                # The agent stays up until the child has its "quit": a notification still
                # queued when an agent closes is not delivered.
                agent.send_notification(peer, "quit")
                self.assertEqual(child.process.wait(timeout=10), 0)
            with self.assertRaises(kvx.FailedPrecondition):
                agent.peers()
        finally:
            child.stop()

    def test_shm(self):
        self.run_pair("shm")

    def test_tcp(self):
        self.run_pair("tcp")

    def test_socket(self):
        self.run_pair("socket")

    def test_peer_killed_during_transfers(self):
        child = DecodeChild("tcp", nbytes=NBYTES)
        try:
            with kvx.Agent("py-prefill-kill", data_path="tcp", peer_timeout=1.0,
                           heartbeat_interval=0.2) as agent:
                source = np.full(NBYTES, 7, dtype=np.uint8)
                local = agent.register_memory(source)
                peer = agent.connect(child.address, timeout=10)
                remote = agent.peer_regions(peer)["kv"]["id"]
                local_list = agent.prepare_local_list(ranges(local))
                remote_list = agent.prepare_remote_list(peer, ranges(remote))
                order = np.arange(BLOCKS, dtype=np.uint32)
                os.kill(child.process.pid, signal.SIGKILL)
                killed = time.monotonic()
                failure = None
                while failure is None and time.monotonic() - killed < 10:
                    try:
                        agent.transfer(kvx.WRITE, local_list, order, remote_list, order,
                                       timeout=10)
                    except kvx.Error as error:
                        failure = error
                self.assertIsInstance(failure, (kvx.PeerFailed, kvx.NotFound), repr(failure))
                self.assertLess(time.monotonic() - killed, 5)
                # The peer leaves the agent's list soon after (its control link closes or times
                # out), and the agent goes on answering.
                while peer in agent.peers() and time.monotonic() - killed < 5:
                    time.sleep(0.05)
                self.assertNotIn(peer, agent.peers())
        finally:
            child.stop()


class HandshakeInfo(unittest.TestCase):
    def test_application_info_reaches_the_peer(self):
        info = '{"engine": "vllm-0", "kv_layout": "NHD"}'
        with kvx.Agent("py-app-a", data_path="socket", application_info=info) as a, \
                kvx.Agent("py-app-b", data_path="socket") as b:
            peer = b.connect(a.listen_address, timeout=10)
            seen = b.peer_info(peer)
            self.assertEqual(seen["name"], "py-app-a")
            self.assertEqual(seen["application_info"], info)
            self.assertGreater(seen["incarnation"], 0)
            self.assertEqual(seen["regions"], [])
            deadline = time.monotonic() + 10
            while "py-app-b" not in a.peers() and time.monotonic() < deadline:
                time.sleep(0.02)
            self.assertEqual(a.peer_info("py-app-b")["application_info"], "")
            with self.assertRaises(kvx.NotFound):
                b.peer_info("nobody")

    def test_close_wakes_a_thread_waiting_for_a_notification(self):
        agent = kvx.Agent("py-waiter", data_path="socket")
        outcome = []

        def wait():
            started = time.monotonic()
            try:
                agent.wait_notification(timeout=60)
                outcome.append(("returned", time.monotonic() - started))
            except kvx.Error as error:
                outcome.append((type(error).__name__, time.monotonic() - started))
        waiter = threading.Thread(target=wait)
        waiter.start()
        time.sleep(0.2)
        agent.close()
        waiter.join(timeout=10)
        self.assertFalse(waiter.is_alive(), "the wait went on after close()")
        self.assertEqual(outcome[0][0], "Cancelled")
        self.assertLess(outcome[0][1], 10)
        with self.assertRaises(kvx.FailedPrecondition):
            agent.wait_notification(timeout=1)

    def test_application_info_over_64_kib_is_refused(self):
        with self.assertRaises(kvx.InvalidArgument) as raised:
            kvx.Agent("py-app-big", data_path="socket", application_info="x" * (64 * 1024 + 1))
        self.assertIn("applicationInfo", str(raised.exception))


if __name__ == "__main__":
    unittest.main()
