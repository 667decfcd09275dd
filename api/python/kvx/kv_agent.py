"""kvx.KvAgent: a prefill or decode agent of kvx/kv_agent.h for Python, with its KV pool,
block placement (contiguous where it can) and request life cycle.

    prefill = kvx.KvAgent("prefill-0", "prefill", model="llama3-8b", blocks=1024)
    decode = kvx.KvAgent("decode-0", "decode", model="llama3-8b", blocks=4096)
    prefill.connect(decode.listen_address)
    blocks = prefill.allocate_blocks(prefill.blocks_for(tokens))
    ... (the prompt's KV lands in those blocks)
    prefill.submit("req-1", tokens, blocks)          # placed on the decode, then moved
    arrival = decode.next_arrival(timeout=10)         # {"id", "blocks", "tokens", ...}
    decode.consume(arrival["id"]); ...; decode.release(arrival["id"])
"""
import json

import numpy as np

from . import _kvx
from .memory import describe_memory

_DEFAULT_WAIT = 60.0  # seconds: every wait has a deadline


class KvAgent:
    """KvAgent(name, role ("prefill" | "decode"), model="llama3-8b" (a built-in shape or a
    JSON object), layout="nhd", blocks, tensors=None, kind="host", device=-1,
    populate=True, mode="push" | "pull", request_timeout=30, lease_timeout=30,
    max_in_flight_bytes_per_peer, max_push_blocks_per_peer (decode: 0 = no cap),
    queue_capacity, prefix_cache_blocks=0, prefix_chunk_tokens=512, reconnect=True,
    check_free_blocks=False, and kvx.Agent's options:
    listen_address, data_path, net_devices, auth_token, gpu_path, data_protection,
    connect_timeout, peer_timeout, heartbeat_interval).

    `tensors`: the server's own KV tensors to use as the pool (one per tensor of the layout,
    each pool()["tensor_bytes"] long; torch tensors, numpy arrays, ... as kvx.describe_memory
    takes them; a shorter one is refused with kvx.InvalidArgument); they are kept alive while
    the agent lives, and must not be resized or freed meanwhile. Without them the agent allocates
    the pool. Times are in seconds. Block ids and segment tables are numpy arrays."""

    def __init__(self, name, role, tensors=None, **options):
        if isinstance(options.get("model"), dict):  # a JSON object, as the docstring says
            options["model"] = json.dumps(options["model"])
        self._tensors = list(tensors or [])
        self._pins = []
        if self._tensors:
            memories = [describe_memory(t) for t in self._tensors]
            kinds = {(m.kind, m.device) for m in memories}
            if len(kinds) != 1:
                raise ValueError(f"the pool's tensors are on different devices: {sorted(kinds)}")
            kind, device = kinds.pop()
            options.setdefault("kind", kind)
            options.setdefault("device", device)
            options["tensors"] = [m.address for m in memories]
            options["tensor_bytes"] = [m.nbytes for m in memories]  # each checked: no overflow
            self._pins = [m.pin for m in memories]  # buffers cannot resize meanwhile
        self._agent = _kvx.KvAgent(name, role, **options)
        self._pool = self._agent.pool()

    # ---- life ----
    @property
    def name(self):
        return self._agent.name

    @property
    def role(self):
        return self._agent.role

    @property
    def listen_address(self):
        return self._agent.listen_address

    def shutdown(self, timeout=5.0, reason="shutting down"):
        """Stops taking requests; fails those still in flight at the deadline."""
        self._agent.shutdown(timeout, reason)

    def close(self):
        """Destroys the agent: a shutdown with a 2 s deadline for the requests in flight.

        Requests that only this process could take further end at once: an arrival not
        released is released, a layer-wise request waiting for layer_ready fails (CANCELLED).
        """
        self._agent.close()
        self._tensors = self._pins = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- peers ----
    def connect(self, address, timeout=10.0):
        """Connects to another KV agent and exchanges pool descriptions; returns its name."""
        return self._agent.connect(address, timeout)

    def peers(self):
        return self._agent.peers()

    # ---- the pool ----
    def pool(self):
        """{"model", "layout", "blocks", "layers", "kv_count", "tokens_per_block",
        "segment_bytes", "block_bytes", "tensors", "tensor_bytes", "memory", "device"}"""
        return dict(self._pool)

    def usage(self):
        return self._agent.usage()

    def blocks_for(self, tokens):
        per_block = self._pool["tokens_per_block"]
        return (int(tokens) + per_block - 1) // per_block

    def segments(self, blocks, layers=None, kvs=None):
        """A segment table (uint64 rows of block, layer, K=0/V=1) of every segment of
        `blocks` (block-major, then layer, then K and V), or of the `layers` and `kvs` given."""
        blocks = np.asarray(blocks, dtype=np.uint64)
        layers = np.arange(self._pool["layers"], dtype=np.uint64) if layers is None \
            else np.asarray(layers, dtype=np.uint64)
        kvs = np.arange(self._pool["kv_count"], dtype=np.uint64) if kvs is None \
            else np.asarray(kvs, dtype=np.uint64)
        grid = np.stack(np.meshgrid(blocks, layers, kvs, indexing="ij"), axis=-1)
        return np.ascontiguousarray(grid.reshape(-1, 3))

    def write_segments(self, segments, data, timeout=_DEFAULT_WAIT):
        """Copies `data` (len(segments) * segment_bytes bytes) into the segments, host and
        CUDA pools alike; for filling KV from the host (tests, benchmarks), not a data path."""
        self._agent.write_segments(segments, data, timeout)

    def read_segments(self, segments, out=None, timeout=_DEFAULT_WAIT):
        """The segments' bytes, into `out` (a writable buffer of the right size) or a new
        uint8 array."""
        if out is None:
            out = np.empty(len(segments) * self._pool["segment_bytes"], dtype=np.uint8)
        self._agent.read_segments(segments, out, timeout)
        return out

    def allocate_blocks(self, count):
        """Blocks for a new prompt (prefill), contiguous when possible: a uint64 array."""
        return self._agent.allocate_blocks(count)

    def free_blocks(self, blocks):
        self._agent.free_blocks(np.ascontiguousarray(blocks, dtype=np.uint64))

    # ---- prefill side ----
    def submit(self, request_id, tokens, source_blocks, prefix_hashes=None, mode=None,
               layerwise=False, destination=None, timeout=None, slice=None,
               keep_source_for_producer=False):
        """Queues the request for placement and transfer; the agent frees `source_blocks`
        when it ends. `slice`: {"source_first_head", "destination_first_head", "heads",
        "destination_id", "sources"} for tensor-parallel ranks (see kvx/kv_types.h).
        `keep_source_for_producer` (layer-wise requests whose layers the caller writes into
        `source_blocks` after submit): a request that fails keeps its source blocks until the
        caller's next `layer_ready` (which raises kvx.FailedPrecondition) or `cancel`, so a
        layer still being written never lands in blocks another request was given."""
        blocks = np.ascontiguousarray(source_blocks, dtype=np.uint64)
        hashes = None if prefix_hashes is None else \
            np.ascontiguousarray(prefix_hashes, dtype=np.uint64)
        self._agent.submit(request_id, int(tokens), blocks, hashes, mode, layerwise,
                           destination, timeout, slice, keep_source_for_producer)

    def layer_ready(self, request_id, layer):
        """Layer-wise requests: the data of `layer` may move now."""
        self._agent.layer_ready(request_id, layer)

    def cancel(self, request_id):
        self._agent.cancel(request_id)

    def status(self, request_id):
        """{"id", "state", "error", "peer", "mode", "placement", "blocks", "prefix_blocks",
        "bytes", "descriptors", "operations", "queued_seconds", "latency_seconds"}"""
        return self._agent.status(request_id)

    def wait(self, request_id, timeout=_DEFAULT_WAIT):
        """The request's status once released; raises how it failed (kvx.Cancelled, ...), or
        kvx.TimedOut at the deadline (it goes on)."""
        return self._agent.wait(request_id, timeout)

    # ---- decode side ----
    def give_back_held_blocks(self, peer=""):
        """Decode: the operator's word that the lost prefill agent `peer` ("" : every lost one
        not connected now) will write no more: the blocks held for it without proof that it
        stopped go back to the pool. Returns how many. If that agent was only stopped, its
        late writes land in blocks other requests have by then: the risk is the caller's."""
        return self._agent.give_back_held_blocks(peer)

    def next_arrival(self, timeout=_DEFAULT_WAIT):
        """The next request whose data is in place: {"id", "peer", "peers", "tokens",
        "blocks" (uint64 array), "prefix_blocks", "prefix_hashes"}; kvx.TimedOut if none;
        kvx.Cancelled at once after shutdown(), once the arrivals in are taken."""
        return self._agent.next_arrival(timeout)

    def wait_layer(self, request_id, layer, timeout=_DEFAULT_WAIT):
        self._agent.wait_layer(request_id, layer, timeout)

    def consume(self, request_id):
        """The server took the data: the lease stops."""
        self._agent.consume(request_id)

    def release(self, request_id):
        """Returns the request's blocks to the pool (or the prefix cache)."""
        self._agent.release(request_id)

    def drop_prefix_cache(self):
        self._agent.drop_prefix_cache()
