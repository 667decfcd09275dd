"""Lines from a pipe with a timeout. select() only sees what is still in the pipe, so reading
through Python's buffered file objects can leave a second line in their buffer, unseen, after
select() has said the pipe is empty: this reads the descriptor itself and keeps the rest."""
import os
import select
import time


class LineReader:
    def __init__(self, fd):
        self._fd = fd
        self._pending = b""
        self._ended = False

    @property
    def ended(self):
        """True once the writer closed the pipe and every line was taken."""
        return self._ended and b"\n" not in self._pending

    def line(self, timeout):
        """The next line without its newline; None if none came within `timeout` s or the pipe
        ended (see `ended`)."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if self._ended or left < 0:
                return None
            ready, _, _ = select.select([self._fd], [], [], left)
            if ready:
                chunk = os.read(self._fd, 65536)
                self._pending += chunk
                self._ended = not chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode(errors="replace").strip()
