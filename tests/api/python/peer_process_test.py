# kvx-test-labels: python unit
"""kvx.integrations.peer_process: a process identity in application_info, and the watch a
decode worker keeps on a prefill worker that copies into its memory itself: it sees the
process end, and says why where it cannot watch (no identity, another host or pid namespace)."""
import json
import subprocess
import sys
import time
import unittest

from kvx.integrations.peer_process import ProcessWatch, Writer, with_this_process


def identity_of(pid, host=None):
    info = json.loads(with_this_process('{"engine": "x"}'))
    info["kvx_process"]["pid"] = pid
    if host is not None:
        info["kvx_process"]["host"] = host
    return json.dumps(info)


class PeerProcess(unittest.TestCase):
    def test_the_identity_joins_what_the_application_says(self):
        info = json.loads(with_this_process('{"engine": "x"}'))
        self.assertEqual(info["engine"], "x")
        self.assertGreater(info["kvx_process"]["pid"], 0)
        self.assertIn("/pid:", info["kvx_process"]["host"])

    def test_a_watch_sees_the_process_end(self):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            watch, why = ProcessWatch.of(identity_of(child.pid))
            self.assertIsNotNone(watch, why)
            self.assertFalse(watch.ended())
            writer = Writer(1, True, watch)
            self.assertFalse(writer.stopped())
            child.kill()
            child.wait(timeout=10)
            deadline = time.monotonic() + 10
            while not watch.ended() and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertTrue(watch.ended())
            self.assertTrue(writer.stopped())
        finally:
            child.kill()
            child.wait(timeout=10)

    def test_a_process_already_gone_has_ended(self):
        child = subprocess.Popen([sys.executable, "-c", "pass"])
        child.wait(timeout=10)
        watch, why = ProcessWatch.of(identity_of(child.pid))
        self.assertIsNotNone(watch, why)
        self.assertTrue(watch.ended())

    def test_what_cannot_be_watched_says_why(self):
        for info, expected in (("", "did not say which process"),
                               ('{"engine": "x"}', "did not say which process"),
                               ("not json", "did not say which process"),
                               ("[1, 2]", "did not say which process"),
                               ('{"kvx_process": 5}', "did not say which process"),
                               (identity_of("12"), "did not say which process"),
                               (identity_of(-3), "did not say which process"),
                               (identity_of(True), "did not say which process"),
                               (identity_of(2**70), "did not say which process"),
                               (identity_of(2**40), "names no process"),
                               (identity_of(1, host=7), "did not say which process"),
                               (identity_of(1, host="another-boot/pid:1"), "another host")):
            watch, why = ProcessWatch.of(info)
            self.assertIsNone(watch, info)
            self.assertIn(expected, why)
            # A direct writer nobody can watch is never taken as stopped; one that places
            # nothing itself always is.
            self.assertFalse(Writer(1, True, None, why).stopped())
            self.assertTrue(Writer(1, False).stopped())


if __name__ == "__main__":
    unittest.main()
