"""kvx: KV-cache transfer engine for disaggregated LLM inference.

    import kvx
    decode = kvx.Agent("decode-0", data_path="shm")
    region = decode.register_memory(kv_cache_tensor, name="kv")
    ...
    prefill.connect(decode.listen_address)

Memory comes in as what servers hold: a torch.Tensor (CPU or CUDA), anything with
__dlpack__ or __cuda_array_interface__, a numpy array, a writable buffer, or
(address, nbytes, device). Descriptor lists and indices go in as arrays (numpy uint64 rows of
region, offset, length; uint32 indices), never lists of objects. Every failure raises the
kvx.Error subclass of its StatusCode (kvx.NotFound, kvx.PeerFailed, kvx.TimedOut, ...) with
kvx's message. Blocking calls release the GIL; no Python code runs on kvx's threads.
"""
import os as _os

_here = _os.path.dirname(_os.path.abspath(__file__))
_probe = _os.path.join(_here, "kvx-ucx-probe")
# Agents run kvx-ucx-probe to have UCX check a peer's address first; the package carries it.
if "KVX_UCX_PROBE" not in _os.environ and _os.access(_probe, _os.X_OK):
    _os.environ["KVX_UCX_PROBE"] = _probe

from . import _kvx  # noqa: E402
from ._kvx import (  # noqa: E402,F401
    Error, InvalidArgument, NotFound, AlreadyExists, FailedPrecondition, ResourceExhausted,
    TimedOut, Cancelled, PeerFailed, ProtocolError, Unauthenticated, TransportError,
    Unimplemented, InternalError,
)
from .memory import Memory, describe_memory  # noqa: E402,F401
from .agent import Agent, READ, WRITE  # noqa: E402,F401
from .kv_agent import KvAgent  # noqa: E402,F401

__all__ = [
    "Agent", "KvAgent", "Memory", "describe_memory", "READ", "WRITE",
    "Error", "InvalidArgument", "NotFound", "AlreadyExists", "FailedPrecondition",
    "ResourceExhausted", "TimedOut", "Cancelled", "PeerFailed", "ProtocolError",
    "Unauthenticated", "TransportError", "Unimplemented", "InternalError",
]
