"""What kvx's vLLM connector (vllm.py) reads from vLLM: its config, parallel state and
requests' statuses."""


def extra(vllm_config):
    """The connector's kv_connector_extra_config (a copy; empty when unset)."""
    return dict(getattr(vllm_config.kv_transfer_config, "kv_connector_extra_config", None) or {})


def finished_normally(request):
    """True for a request that finished length capped or stopped (vLLM's RequestStatus): only
    those hand their KV to a decode; an aborted one's blocks go at once."""
    status = getattr(request, "status", None)
    return getattr(status, "name", status) in ("FINISHED_LENGTH_CAPPED", "FINISHED_STOPPED")


def total_kv_heads(vllm_config):
    """The model's KV heads over all TP ranks (vLLM's model config), None where unknown."""
    model = getattr(vllm_config, "model_config", None)
    try:
        return int(model.get_total_num_kv_heads())
    except (AttributeError, TypeError, ValueError):
        return None


def tensor_parallel(extra):
    """(rank, size) of this worker: vLLM's parallel state when it is set up, else the extra
    config's tp_rank and tp_size (0 and 1 by default)."""
    try:
        from vllm.distributed.parallel_state import (get_tensor_model_parallel_rank,
                                                     get_tensor_model_parallel_world_size)
        return get_tensor_model_parallel_rank(), get_tensor_model_parallel_world_size()
    except Exception:  # vLLM absent, or its parallel state not initialised (scheduler side)
        return int(extra.get("tp_rank", 0)), int(extra.get("tp_size", 1))


def data_parallel_rank(vllm_config):
    """This engine's data-parallel rank (0 without data parallelism)."""
    try:
        return int(getattr(vllm_config.parallel_config, "data_parallel_rank", 0) or 0)
    except (AttributeError, TypeError, ValueError):
        return 0
