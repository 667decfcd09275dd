"""kvx.Agent: an agent of kvx/agent.h for Python."""
import itertools
import threading
import warnings

from . import _kvx
from .memory import describe_memory, moved_since

READ = "read"    # pull: the peer's memory into this agent's
WRITE = "write"  # push: this agent's memory into the peer's

_DEFAULT_WAIT = 60.0  # seconds: every wait has a deadline


class Agent:
    """One kvx agent: its control channel, its data path, its registered memory.

    Agent(name, listen_address="127.0.0.1:0", data_path=None ("shm", "tcp" or "socket"),
          net_devices=None, auth_token=None, gpu_path=None, data_protection=None,
          caller_progress=False, connect_timeout=None, peer_timeout=None,
          heartbeat_interval=None, application_info=None)

    data_protection: for data_path "socket", "headers" (every request authenticated, the
    blocks in clear), "authenticated" (the blocks tagged too), "encrypted", or "auto" (the
    default: KVX_DATA_PROTECTION if set, else encrypted when a token lets peers be on other
    hosts, headers otherwise).

    application_info: a str (at most 64 KiB of UTF-8) that peers read in peer_info(); a
    server puts its own handshake metadata there (its KV layout, its engine id).

    Times are in seconds. Use it as a context manager, or call close(); a closed agent raises
    kvx.FailedPrecondition. Registered objects are kept alive until deregistered or closed.
    """

    def __init__(self, name, **options):
        self._agent = _kvx.Agent(name, **options)
        self._lock = threading.Lock()
        self._held = {}  # region id -> (the object whose memory it is, its Memory)
        self._names = itertools.count()

    # ---- life ----
    @property
    def name(self):
        return self._agent.name

    @property
    def listen_address(self):
        return self._agent.listen_address

    def close(self):
        self._agent.close()
        with self._lock:
            self._held.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- memory ----
    def register_memory(self, obj, name=None, exposed=True):
        """Registers the memory of `obj` (see kvx.describe_memory) and returns its region id.
        Until it is deregistered, `obj` is kept alive and a buffer (a bytearray, a numpy
        array) holds an export, so that it refuses to resize (BufferError, ValueError); a
        torch tensor cannot be held so: do not resize_() it or free its storage meanwhile
        (check_registered_memory() and deregister_memory() say when it happened)."""
        memory = describe_memory(obj)
        if name is None:
            name = f"py.{next(self._names)}"
        region = self._agent.register_memory(name, memory.address, memory.nbytes, memory.kind,
                                             memory.device, exposed)
        with self._lock:
            # The object and, for a buffer, an export of it: while registered it can neither
            # be freed nor (a bytearray) move its bytes to grow.
            self._held[region] = (obj, memory)  # memory.pin: the export, if any
        return region

    def allocate_memory(self, name, nbytes, kind="host", device=-1, exposed=True, populate=True):
        """Memory the agent allocates (and frees when deregistered): (region id, address)."""
        return self._agent.allocate_memory(name, nbytes, kind, device, exposed, populate)

    def deregister_memory(self, region):
        self._agent.deregister_memory(region)
        with self._lock:
            held = self._held.pop(region, None)
        if held is not None:
            why = moved_since(*held)
            if why:
                warnings.warn(f"region {region}: {why}", RuntimeWarning, stacklevel=2)

    def check_registered_memory(self):
        """Raises kvx.FailedPrecondition naming every registered object whose bytes moved or
        shrank since its registration (a torch tensor resize_()d or set_() to other storage,
        which no buffer export can prevent); a server may call it where it changes tensors.
        Returns the number of registered objects checked."""
        with self._lock:
            held = dict(self._held)
        moved = [f"region {region}: {why}" for region, (obj, memory) in held.items()
                 if (why := moved_since(obj, memory))]
        if moved:
            raise _kvx.FailedPrecondition("; ".join(moved))
        return len(held)

    # ---- peers ----
    def connect(self, address, timeout=None):
        """Connects to the agent at `address`, exchanging metadata; returns its name."""
        return self._agent.connect(address, timeout)

    def disconnect(self, peer):
        self._agent.disconnect(peer)

    def export_metadata(self):
        return self._agent.export_metadata()

    def load_peer_metadata(self, blob):
        return self._agent.load_peer_metadata(bytes(blob))

    def peers(self):
        return self._agent.peers()

    def peer_writes_directly(self, peer):
        """Whether `peer`'s process writes into this agent's memory by itself on the live data
        path (UCX over shared memory or cross-memory attach, CUDA IPC): dropping the link then
        does not stop a copy it is in the middle of; only its own answer, or the end of its
        process, does. False where this agent places every byte (tcp, RDMA, socket)."""
        return self._agent.peer_writes_directly(peer)

    def peer_info(self, peer):
        """{"name", "incarnation", "application_info", "regions": [...]}: what the peer said
        of itself in its handshake (application_info: its Agent(application_info=...), "" when
        none)."""
        return self._agent.peer_info(peer)

    def peer_regions(self, peer):
        """The peer's exposed regions by name: {name: {"id", "address", "length", ...}}."""
        return {r["name"]: r for r in self._agent.peer_regions(peer)}

    # ---- lists and transfers ----
    def prepare_local_list(self, ranges):
        """`ranges`: uint64 rows (region, offset, length), e.g. a numpy array of shape (N, 3)."""
        return self._agent.prepare_local_list(ranges)

    def prepare_remote_list(self, peer, ranges):
        return self._agent.prepare_remote_list(peer, ranges)

    def release_list(self, list_id):
        self._agent.release_list(list_id)

    def make_transfer(self, op, local_list, local_indices, remote_list, remote_indices,
                      notification=None):
        """A transfer pairing entry local_indices[i] with remote_indices[i] (uint32 arrays);
        `notification` (bytes) reaches the peer after the data. Not posted yet."""
        if isinstance(notification, str):
            notification = notification.encode()
        return self._agent.make_transfer(op, local_list, local_indices, remote_list,
                                         remote_indices, notification)

    def post(self, transfer):
        self._agent.post(transfer)

    def poll(self, transfer):
        """("idle" | "pending" | "done" | "failed", the failure's message or None)."""
        return self._agent.poll(transfer)

    def wait(self, transfer, timeout=_DEFAULT_WAIT):
        """Returns when the transfer is done; raises how it failed, or kvx.TimedOut (it goes
        on)."""
        self._agent.wait(transfer, timeout)

    def cancel(self, transfer):
        """When it returns, no further byte of the transfer lands."""
        self._agent.cancel(transfer)

    def release(self, transfer):
        self._agent.release(transfer)

    def transfer(self, op, local_list, local_indices, remote_list, remote_indices,
                 notification=None, timeout=_DEFAULT_WAIT):
        """make_transfer, post, wait and release in one call."""
        transfer = self.make_transfer(op, local_list, local_indices, remote_list,
                                      remote_indices, notification)
        try:
            self.post(transfer)
            self.wait(transfer, timeout)
        finally:
            self.release(transfer)

    # ---- notifications ----
    def send_notification(self, peer, payload):
        """Hands `payload` to the data path for `peer`; one still queued when this agent closes
        may be dropped: have the peer answer where arrival matters."""
        if isinstance(payload, str):
            payload = payload.encode()
        self._agent.send_notification(peer, bytes(payload))

    def take_notifications(self, max_count=None):
        """Received notifications, oldest first: [(peer, payload bytes)]."""
        if max_count is None:
            return self._agent.take_notifications()
        return self._agent.take_notifications(max_count)

    def wait_notification(self, timeout=_DEFAULT_WAIT):
        """(peer, payload bytes) of the oldest notification; kvx.TimedOut when none came."""
        return self._agent.wait_notification(timeout)

    def progress(self):
        """One round of progress (agents made with caller_progress=True)."""
        return self._agent.progress()
