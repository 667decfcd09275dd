"""Stand-in for sglang.srt.managers.disagg_service (see ../../../README.md)."""
from sglang.srt.disaggregation.utils import (DisaggregationMode, KVClassType, TransferBackend,
                                             get_kv_class)


def start_disagg_service(server_args):
    """The prefill node's bootstrap server, from the backend SGLang was told to use."""
    mode = DisaggregationMode(server_args.disaggregation_mode)
    backend = TransferBackend(server_args.disaggregation_transfer_backend)
    if mode == DisaggregationMode.PREFILL:
        server_class = get_kv_class(backend, KVClassType.BOOTSTRAP_SERVER)
        return server_class(host=server_args.host, port=server_args.disaggregation_bootstrap_port)
    return None
