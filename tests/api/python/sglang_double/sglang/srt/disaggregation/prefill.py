"""Stand-in for sglang.srt.disaggregation.prefill (see ../../../README.md): how a prefill
scheduler builds its backend's manager."""
import numpy as np

from sglang.srt.disaggregation.utils import (DisaggregationMode, KVClassType, TransferBackend,
                                             get_kv_class)


def init_kv_manager(server_args, buffers):
    backend = TransferBackend(server_args.disaggregation_transfer_backend)
    kv_args = get_kv_class(backend, KVClassType.KVARGS)()
    kv_args.engine_rank = 0
    kv_args.kv_data_ptrs = [b.ctypes.data for b in buffers]
    kv_args.kv_data_lens = [b.nbytes for b in buffers]
    kv_args.kv_item_lens = [64 for _ in buffers]
    kv_args.aux_data_ptrs, kv_args.aux_data_lens, kv_args.aux_item_lens = [], [], []
    kv_args.state_types = []
    kv_args.gpu_id = 0
    kv_args.page_size = 1
    kv_args.kv_memory_kind = "host"
    manager_class = get_kv_class(backend, KVClassType.MANAGER)
    return manager_class(kv_args, DisaggregationMode.PREFILL, server_args, False)


def buffers():
    return [np.zeros(64 * 16, dtype=np.uint8) for _ in range(2)]
