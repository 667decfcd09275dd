"""Stand-in for sglang.srt.disaggregation.base.conn (see ../../../../README.md)."""
import dataclasses
from abc import ABC, abstractmethod
from typing import Optional


class KVArgs:
    engine_rank: int
    kv_data_ptrs: list
    kv_data_lens: list
    kv_item_lens: list
    aux_data_ptrs: list
    aux_data_lens: list
    aux_item_lens: list
    state_types: list
    gpu_id: int
    page_size: int


class KVPoll:
    Failed = 0
    Bootstrapping = 1
    WaitingForInput = 2
    Transferring = 3
    Success = 4


@dataclasses.dataclass
class KVTransferMetric:
    transfer_latency_s: Optional[float] = None
    alloc_latency_s: Optional[float] = None
    transfer_total_bytes: Optional[int] = None


class BaseKVManager(ABC):
    @abstractmethod
    def __init__(self, args, disaggregation_mode, server_args, is_mla_backend=False):
        ...

    @abstractmethod
    def register_to_bootstrap(self):
        ...


class BaseKVSender(ABC):
    @abstractmethod
    def __init__(self, mgr, bootstrap_addr, bootstrap_room, dest_tp_ranks, pp_rank,
                 req_has_disagg_prefill_dp_rank=False):
        ...

    @abstractmethod
    def init(self, num_kv_indices, aux_index=None):
        ...

    @abstractmethod
    def send(self, kv_indices, state_indices=None, token_position_offset=0):
        ...

    @abstractmethod
    def get_transfer_metric(self):
        ...

    @abstractmethod
    def poll(self):
        ...

    @abstractmethod
    def failure_exception(self):
        ...

    def pop_decode_prefix_len(self):
        return 0

    def should_send_kv_chunk(self, num_pages, last_chunk):
        return num_pages > 0

    def clear(self):
        pass

    def abort(self):
        pass


class BaseKVReceiver(ABC):
    @abstractmethod
    def __init__(self, mgr, bootstrap_addr, bootstrap_room=None):
        ...

    @abstractmethod
    def init(self, prefill_dp_rank):
        ...

    @abstractmethod
    def send_metadata(self, kv_indices, aux_index=None, state_indices=None,
                      decode_prefix_len=None):
        ...

    @abstractmethod
    def poll(self):
        ...

    @abstractmethod
    def failure_exception(self):
        ...

    def clear(self):
        pass

    def abort(self):
        pass


class BaseKVBootstrapServer(ABC):
    @abstractmethod
    def __init__(self, host, port):
        ...
