"""A test's engine in a process of its own (a Python script), driven by lines: commands on its
stdin, answers on its stdout, every wait bounded."""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from line_reader import LineReader  # noqa: E402


class EngineProcess:
    def __init__(self, script, *args, prefix=(), env=None):
        """`prefix`: a command that runs the script (["ip", "netns", "exec", NS], say); `env`:
        variables to set in its environment."""
        self.name = script
        environment = dict(os.environ, **(env or {}))
        self.process = subprocess.Popen([*prefix, sys.executable, os.path.join(HERE, script),
                                         *map(str, args)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=environment)
        self.lines = []  # said, not yet expected
        self._reader = LineReader(self.process.stdout.fileno())

    def _read(self, timeout):
        line = self._reader.line(timeout)
        if line is not None:
            self.lines.append(line)
        return line is not None

    def expect(self, prefix, timeout=20):
        """The first line said that starts with `prefix`; AssertionError after `timeout` s or
        once the process ended without saying it."""
        deadline = time.monotonic() + timeout
        while True:
            for i, line in enumerate(self.lines):
                if line.startswith(prefix):
                    return self.lines.pop(i)
            left = deadline - time.monotonic()
            if left <= 0 or self.process.poll() is not None and not self._read(0):
                raise AssertionError(f"{self.name} did not say {prefix!r} (said {self.lines})")
            self._read(min(left, 0.1))

    def command(self, text):
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()

    def stop(self):
        """Asks it to quit (kills it after 10 s); idempotent."""
        if self.process.poll() is None:
            try:
                self.command("quit")
                self.process.wait(timeout=10)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait(timeout=10)
        self.process.stdin.close()
        self.process.stdout.close()


def wait_stopped(pid, timeout=10):
    """Returns once the kernel shows process `pid` stopped (state T)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/stat") as stat:
            if stat.read().rsplit(")", 1)[1].split()[0] == "T":
                return
        time.sleep(0.001)
    raise AssertionError(f"process {pid} did not stop within {timeout} s")
