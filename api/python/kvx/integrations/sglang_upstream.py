"""What kvx's SGLang backend takes from SGLang itself when it is importable: the base classes
of a transfer backend, its poll states, its transfer metric and its disaggregation mode
(sglang.srt.disaggregation.base.conn and .utils), with stand-ins of the same names and
members where SGLang is not installed."""
import dataclasses
import enum
from typing import Optional

try:
    from sglang.srt.disaggregation.base.conn import (BaseKVBootstrapServer, BaseKVManager,
                                                     BaseKVReceiver, BaseKVSender, KVPoll)
except ImportError:  # stand-ins: the members SGLang's loops call, with its defaults
    from kvx.integrations.sglang_states import KVPoll

    class BaseKVManager:
        def __init__(self, args, disaggregation_mode, server_args, is_mla_backend=False):
            pass

    class BaseKVSender:
        def pop_decode_prefix_len(self):
            return 0

        def should_send_kv_chunk(self, num_pages, last_chunk):
            return num_pages > 0

        def clear(self):
            pass

        def abort(self):
            pass

    class BaseKVReceiver:
        def clear(self):
            pass

        def abort(self):
            pass

    class BaseKVBootstrapServer:
        def __init__(self, host, port):
            pass

try:
    from sglang.srt.disaggregation.base.conn import KVTransferMetric
except ImportError:
    @dataclasses.dataclass
    class KVTransferMetric:
        transfer_latency_s: Optional[float] = None
        alloc_latency_s: Optional[float] = None
        transfer_total_bytes: Optional[int] = None


def mode_name(disaggregation_mode):
    """"prefill" or "decode" from SGLang's DisaggregationMode (or its value)."""
    value = disaggregation_mode.value if isinstance(disaggregation_mode, enum.Enum) \
        else disaggregation_mode
    if value not in ("prefill", "decode"):
        raise ValueError(f"kvx's SGLang backend serves DisaggregationMode PREFILL or DECODE, "
                         f"not {disaggregation_mode!r}")
    return value


__all__ = ["BaseKVBootstrapServer", "BaseKVManager", "BaseKVReceiver", "BaseKVSender",
           "KVPoll", "KVTransferMetric", "mode_name"]
