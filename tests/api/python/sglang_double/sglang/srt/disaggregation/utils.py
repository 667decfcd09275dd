"""Stand-in for sglang.srt.disaggregation.utils (see ../../../README.md)."""
from enum import Enum


class DisaggregationMode(Enum):
    NULL = "null"
    PREFILL = "prefill"
    DECODE = "decode"


class TransferBackend(Enum):
    MOONCAKE = "mooncake"
    MORI = "mori"
    NIXL = "nixl"
    ASCEND = "ascend"
    FAKE = "fake"


class KVClassType(Enum):
    KVARGS = "kvargs"
    MANAGER = "manager"
    SENDER = "sender"
    RECEIVER = "receiver"
    BOOTSTRAP_SERVER = "bootstrap_server"


def get_kv_class(transfer_backend, class_type):
    """Each known backend maps its classes; this stand-in has none of their code."""
    if transfer_backend in (TransferBackend.MOONCAKE, TransferBackend.MORI, TransferBackend.NIXL,
                            TransferBackend.ASCEND, TransferBackend.FAKE):
        raise NotImplementedError(f"the stand-in does not carry {transfer_backend}")
    raise ValueError(f"Unsupported transfer backend: {transfer_backend}")
