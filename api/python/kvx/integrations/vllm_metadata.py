"""What kvx's vLLM connector (vllm.py) exchanges with vLLM each step and at start-up: a
worker's handshake, the scheduler's metadata for the workers, the workers' metadata for the
scheduler, and a decode request's read (or push destination) spec."""
import dataclasses

from kvx.integrations.vllm_upstream import (KVConnectorHandshakeMetadata, KVConnectorMetadata,
                                            KVConnectorWorkerMetadata)


@dataclasses.dataclass
class KvxHandshake(KVConnectorHandshakeMetadata):
    """A worker's kvx address and KV cache layout, for the scheduler (and peers) to know."""
    engine_id: str
    tp_rank: int
    address: str
    layout: dict
    pp_rank: int = 0


@dataclasses.dataclass
class ReadSpec:
    """A decode request's blocks, a list per KV cache group (vllm_groups.py)."""
    request_id: str
    local_block_ids: list
    remote_block_ids: list
    remote_addresses: list  # the prefill workers' kvx addresses, by TP rank
    remote_request_id: str
    remote_layout: dict = None  # a prefill worker's KvLayout.describe() (pull)
    skip: list = None           # push: per group, the prefill's blocks already here
    remote_stages: list = None  # the prefill's pipeline stages (vllm_stages.Stage)


@dataclasses.dataclass
class KvxConnectorMetadata(KVConnectorMetadata):
    """Scheduler -> worker, once per step."""
    reads: list = dataclasses.field(default_factory=list)     # ReadSpec: decode reads
    releases: list = dataclasses.field(default_factory=list)  # ReadSpec without local blocks
    sends: dict = dataclasses.field(default_factory=dict)     # request id -> lease deadline
    saves: dict = dataclasses.field(default_factory=dict)     # push: request id -> block ids
    #                                                           (a list per group)
    aborts: list = dataclasses.field(default_factory=list)    # push: requests not to write
    heartbeats: dict = dataclasses.field(default_factory=dict)  # prefill request -> workers


@dataclasses.dataclass
class KvxWorkerMetadata(KVConnectorWorkerMetadata):
    """Worker -> scheduler, once per step (aggregated over the workers by vLLM)."""
    pending: bool = False  # work that needs steps: an aborted push settling, a release or
    #                         read waiting for its connect

    def aggregate(self, other):
        return KvxWorkerMetadata(self.pending or getattr(other, "pending", False))
